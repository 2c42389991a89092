"""A 120-run level-set sweep on a 2-worker Dask LocalCluster versus the process pool ``--jobs 2``
(issue 14: target within 1.3x the wall time of ``--jobs 2``).

The sweep: ``levelset/sinusoidal`` and ``levelset/himmelblau`` (50x50 grids, Inatsu et al.
Sec. 5.1 Cases 2 and 3) x ``randomized-straddle``, ``straddle``, ``us`` x seeds 0-19, budget 300
(the paper's): 2 x 3 x 20 = 120 runs of about 0.3-0.5 s each on one quiet core.

Three timings per repeat, each the wall time of a whole ``boloop bench run`` command (a new Python
process, imports included, as a user runs it) into a fresh directory:

* ``pool``: ``--jobs 2`` (the process pool);
* ``dask``: ``--executor dask --jobs 2``: a LocalCluster of 2 single-threaded worker processes is
  started for the sweep and closed afterwards (start-up and the workers' imports included);
* ``dask-warm``: ``--executor dask --scheduler ADDRESS`` on a 2-worker LocalCluster started once by
  this script before the repeats (a running cluster; its workers have imported boloop after the
  first repeat).

The order of the three rotates between repeats (the machine may be shared). Prints the median wall
time of each and the ratios to ``pool``, and checks that the three results tables are the same row
for row (timing columns aside).

Run: ``nice -n 5 .venv/bin/python benchmarks/dask_sweep.py [--repeats 3]``; ``--seeds 4`` for a
quick check (24 runs). No BLAS thread variable is needed: every process of a sweep runs one BLAS
thread unless one is set (the process pool's workers ran one thread per core each before, and
then only ``OMP_NUM_THREADS=1`` made the comparison fair). The variables set are printed.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boloop._blas import BLAS_THREAD_VARIABLES
from boloop.bench.dask_executor import start_local_cluster

PROBLEMS = ["levelset/sinusoidal", "levelset/himmelblau"]
METHODS = ["randomized-straddle", "straddle", "us"]


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="", encoding="utf-8") as fh:
        return [
            {k: v for k, v in r.items() if not k.endswith("_seconds")} for r in csv.DictReader(fh)
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=300)
    args = parser.parse_args()

    n_runs = len(PROBLEMS) * len(METHODS) * args.seeds
    blas = {k: v for k, v in os.environ.items() if k in BLAS_THREAD_VARIABLES}
    print(
        f"{n_runs} runs: {' '.join(PROBLEMS)} x {' '.join(METHODS)} x seeds 0-{args.seeds - 1}, "
        f"budget {args.budget}; BLAS thread variables: {blas or 'none set'}; "
        f"load before: {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    command = [sys.executable, "-m", "boloop.cli", "bench", "run", "--quiet"]
    command += ["--problem", *PROBLEMS, "--method", *METHODS]
    command += ["--seeds", str(args.seeds), "--budget", str(args.budget)]
    times: dict[str, list[float]] = {"pool": [], "dask": [], "dask-warm": []}
    with tempfile.TemporaryDirectory() as tmp, start_local_cluster(2) as warm:
        options = {
            "pool": ["--jobs", "2"],
            "dask": ["--executor", "dask", "--jobs", "2"],
            "dask-warm": ["--executor", "dask", "--scheduler", warm.scheduler_address],
        }
        names = list(options)
        for r in range(args.repeats):
            order = names[r % 3 :] + names[: r % 3]
            for name in order:
                out = Path(tmp) / f"{name}-{r}"
                t0 = time.perf_counter()
                done = subprocess.run(
                    [*command, *options[name], "--out", str(out)], capture_output=True, text=True
                )
                seconds = time.perf_counter() - t0
                assert done.returncode == 0, done.stderr[-2000:]
                assert done.stdout.startswith(f"{n_runs} runs completed, 0 skipped, 0 failed")
                times[name].append(seconds)
                print(
                    f"  repeat {r} {name:9s} {seconds:7.2f} s  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            reference = _rows(Path(tmp) / f"pool-{r}")
            for name in names[1:]:
                assert _rows(Path(tmp) / f"{name}-{r}") == reference, f"{name} rows differ"
    pool = statistics.median(times["pool"])
    print(f"median wall time over {args.repeats} repeats (rows identical in all):")
    for name in names:
        med = statistics.median(times[name])
        print(f"  {name:9s} {med:7.2f} s   ratio to pool {med / pool:.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
