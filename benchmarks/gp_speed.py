"""Speed of the GP core (issue 2): fit, prediction on 10^5 points, incremental candidate cache.

Not a test. Run single-threaded, as the targets are stated for one core::

    make bench                      # or
    OMP_NUM_THREADS=1 python benchmarks/gp_speed.py [--quick] [--repeats R]

Prints a markdown table: the median wall time over ``R`` repeats of each operation, with the
target where the issue sets one. Targets (issue 2): predict mean and variance on N = 10^5 points
with n = 200 in <= 0.5 s; one incremental cache step at N = 10^5, n = 300 in <= 50 ms; a fit at
n = 200 in <= 0.2 s.
"""

from __future__ import annotations

import os

# single-threaded BLAS: set before numpy is imported anywhere
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

from boloop.gp import CandidatePosterior, ExactGP, Matern  # noqa: E402
from boloop.gp.marginal_likelihood import StationaryLogPosterior  # noqa: E402

try:  # also limit any BLAS already loaded (e.g. when run with threads preset by the shell)
    from threadpoolctl import threadpool_limits

    _LIMITS = threadpool_limits(1)
except ImportError:  # pragma: no cover - optional
    _LIMITS = None

D = 3


def _objective(X: np.ndarray) -> np.ndarray:
    """A smooth test function on [0, 1]^3, (n, 3) -> (n,)."""
    return np.sin(6.0 * X[:, 0]) + np.cos(4.0 * X[:, 1]) * X[:, 2] + 0.5 * X[:, 2] ** 2


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, D))
    y = _objective(X) + 0.05 * rng.standard_normal(n)
    return X, y


def _kernel() -> Matern:
    return Matern(nu=2.5, lengthscale=[0.3] * D, variance=1.0)


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def _median(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time over ``repeats`` calls."""
    runs = [_timed(fn) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def bench_fit(n: int, repeats: int, n_restarts: int) -> tuple[float, float, int, float]:
    """Median (wall, CPU) of a fit, the number of likelihood evaluations in one fit, and the
    median CPU time of one likelihood-and-gradient evaluation at the fitted optimum."""
    X, y = _data(n, seed=n)

    def run() -> None:
        ExactGP(_kernel(), noise_variance=1e-2, fit_noise=True).fit(
            X, y, n_restarts=n_restarts, seed=0
        )

    wall, cpu = _median(run, repeats)
    gp = ExactGP(_kernel(), noise_variance=1e-2, fit_noise=True).set_data(X, y)
    # fits of stationary kernels evaluate the lean objective (gp/marginal_likelihood.py), others
    # the GP's general log_posterior: count both
    evaluations = 0
    lean_call = StationaryLogPosterior.__call__
    general = gp.log_posterior

    def counted_lean(self: StationaryLogPosterior, p: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal evaluations
        evaluations += 1
        return lean_call(self, p)

    def counted(p: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal evaluations
        evaluations += 1
        return general(p)

    StationaryLogPosterior.__call__ = counted_lean  # type: ignore[method-assign]
    gp.log_posterior = counted  # type: ignore[method-assign]
    try:
        gp.fit(n_restarts=n_restarts, seed=0)
    finally:
        StationaryLogPosterior.__call__ = lean_call  # type: ignore[method-assign]
        del gp.log_posterior
    p = gp.free_parameters()
    objective = StationaryLogPosterior.for_gp(gp) or gp.log_posterior
    per_eval = _median(lambda: objective(p), max(5, 20 if n <= 200 else 3))[1]
    return wall, cpu, evaluations, per_eval


def bench_predict(N: int, n: int, repeats: int) -> tuple[float, float]:
    X, y = _data(n, seed=1)
    gp = ExactGP(_kernel(), noise_variance=1e-2).set_data(X, y)
    C = np.random.default_rng(2).random((N, D))
    return _median(lambda: gp.predict(C), repeats)


def bench_cache_steps(N: int, n_report: list[int], repeats: int) -> dict[int, tuple[float, float]]:
    """Median time of one ``condition`` + cache update at the reported sizes n (n grows to max)."""
    n_max = max(n_report)
    X, y = _data(n_max + repeats + 1, seed=3)
    C = np.random.default_rng(4).random((N, D))
    gp = ExactGP(_kernel(), noise_variance=1e-2)
    gp.set_data(X[:1], y[:1])
    cache = CandidatePosterior(gp, C)
    cache.update()
    out: dict[int, tuple[float, float]] = {}
    # grow to each reported size without timing, then time `repeats` single steps around it
    for n_target in sorted(n_report):
        while gp.n < n_target - repeats // 2:
            i = gp.n
            gp.condition(X[i : i + 1], y[i : i + 1])
        cache.update()
        runs = []
        for _ in range(repeats):
            i = gp.n

            def step(i: int = i) -> None:
                gp.condition(X[i : i + 1], y[i : i + 1])
                cache.update()

            runs.append(_timed(step))
        out[n_target] = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
        )
    return out


def _fmt(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1.0 else f"{t:.2f} s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--restarts", type=int, default=3, help="n_restarts of ExactGP.fit")
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    args = parser.parse_args(argv)
    R = args.repeats

    fit_ns = [50, 200] if args.quick else [50, 200, 1000]
    cache_Ns = [10_000] if args.quick else [10_000, 100_000]
    N_pred = 10_000 if args.quick else 100_000

    rows: list[tuple[str, int, tuple[float, float], str]] = []
    for n in fit_ns:
        reps = R if n <= 200 else max(1, min(R, 3))
        wall, cpu, evaluations, per_eval = bench_fit(n, reps, args.restarts)
        target = "<= 0.2 s" if n == 200 else ""
        name = f"fit, n = {n} ({evaluations} likelihood evaluations of {_fmt(per_eval)} CPU each)"
        rows.append((name, reps, (wall, cpu), target))
    t = bench_predict(N_pred, 200, R)
    target = "<= 0.5 s" if N_pred == 100_000 else ""
    rows.append((f"predict mean + variance, N = {N_pred:,}, n = 200", R, t, target))
    for N in cache_Ns:
        res = bench_cache_steps(N, [100, 300, 500], R)
        for n, t in res.items():
            target = "<= 50 ms" if (N == 100_000 and n == 300) else ""
            rows.append((f"cache step (condition + update), N = {N:,}, n = {n}", R, t, target))

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(
        f"fit: ARD Matern-5/2 (d = {D}) + fitted noise, L-BFGS-B from the initial point and "
        f"{args.restarts} random restarts; median over repeats; CPU = process time"
    )
    print()
    print("| operation | repeats | median wall | median CPU | target | met (wall / CPU) |")
    print("|---|---|---|---|---|---|")
    for name, reps, (wall, cpu), target in rows:
        met = ""
        if target:
            limit = float(target.split()[1]) * (1e-3 if target.endswith("ms") else 1.0)
            met = f"{'yes' if wall <= limit else 'NO'} / {'yes' if cpu <= limit else 'NO'}"
        print(f"| {name} | {reps} | {_fmt(wall)} | {_fmt(cpu)} | {target} | {met} |")


if __name__ == "__main__":
    main()
