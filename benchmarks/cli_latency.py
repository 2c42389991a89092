"""Latency of ``boloop study ask`` / ``tell`` on studies with many answers (issue 15).

For each family's main method on the family's toy problem, a study with ``--answers`` answers
(answers from the problem's oracle, through the Python API), then ``--repeats`` rounds of three
timed command-line calls, each a fresh process as a person or a lab script would run them:
``boloop --version`` (the floor: Python start-up and the argument parser), ``boloop study ask
NAME`` and ``boloop study tell NAME ID ANSWER`` (the oracle's answer to that query). Reported:
medians of the wall time and of the CPU time (user + system, less sensitive to other load) and
the median of ``ask - version`` and ``tell - version``: the issue's target is 0.3 s on a quiet
machine; the same differences of CPU times are the figure to read on a loaded machine.
``--blas-threads N`` runs the same calls with ``OMP_NUM_THREADS`` etc. set to N (the
user's own setting wins over the CLI's default of 1), to see what threading costs under load.

Run:  nice -n 5 .venv/bin/python benchmarks/cli_latency.py [--answers 300] [--repeats 7]
      [--methods randomized-straddle mr-lpf m-safeopt cobol] [--storage sqlite:///x.db]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "randomized-straddle": ("levelset/toy", {}),
    "mr-lpf": ("preference/toy", {"horizon": 2000}),
    "m-safeopt": ("safe/toy", {}),
    "cobol": ("expert/toy", {}),
}
BLAS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _boloop() -> list[str]:
    exe = shutil.which("boloop", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "boloop.cli"]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {res.stderr}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, res.stdout


def _fill(url: str, name: str, method: str, n: int) -> None:
    from boloop.problems import get
    from boloop.simulate import oracle_rng
    from boloop.study import create_study

    problem_id, options = CASES[method]
    problem, rng = get(problem_id), oracle_rng(0)
    study = create_study(name, method, problem=problem_id, storage=url, seed=0, **options)
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))


def _oracle_text(url: str, name: str, method: str, qid: int, rng) -> str:  # noqa: ANN001
    from boloop.problems import get
    from boloop.study import load_study
    from boloop.study.answers import answer_text

    q = load_study(name, storage=url).ask()
    assert q.id == qid, (q.id, qid)
    answer = get(CASES[method][0]).answer(q.query, rng)
    return answer_text(q.kind, answer).replace(" ", "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--methods", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--storage", default=None, help="reuse studies in this storage")
    ap.add_argument("--blas-threads", type=int, default=None)
    args = ap.parse_args()

    from boloop.simulate import oracle_rng

    tmp = None if args.storage else tempfile.mkdtemp(prefix="boloop-cli-latency-")
    url = args.storage or f"sqlite:///{os.path.join(str(tmp), 'latency.db')}"
    env = {k: v for k, v in os.environ.items() if k not in BLAS}
    if args.blas_threads is not None:
        env.update({k: str(args.blas_threads) for k in BLAS})
    env["BOLOOP_STORAGE"] = url
    cli = _boloop()
    from boloop.study import list_studies

    have = {r["name"] for r in list_studies(url)} if args.storage else set()
    print(
        f"{args.answers} answers, {args.repeats} repeats, BLAS threads "
        f"{args.blas_threads or 'CLI default (1)'}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "| method | version s | ask s | tell s | ask - version s | tell - version s "
        "| CPU version s | CPU ask s | CPU tell s | CPU ask - version s | CPU tell - version s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rng = oracle_rng(1)
    for method in args.methods:
        name = f"lat-{method}"
        if name not in have:
            _fill(url, name, method, args.answers)
        # one untimed round: pays one-off costs (a first snapshot under this code)
        _, _, out = _timed([*cli, "study", "ask", name, "--json"], env)
        qid = int(out.split('"id": ')[1].split(",")[0])
        _timed(
            [*cli, "study", "tell", name, str(qid), _oracle_text(url, name, method, qid, rng)], env
        )
        rows: dict[str, list[tuple[float, float]]] = {"version": [], "ask": [], "tell": []}
        for _ in range(args.repeats):
            w, c, _ = _timed([*cli, "--version"], env)
            rows["version"].append((w, c))
            w, c, out = _timed([*cli, "study", "ask", name, "--json"], env)
            rows["ask"].append((w, c))
            qid = int(out.split('"id": ')[1].split(",")[0])
            text = _oracle_text(url, name, method, qid, rng)
            w, c, _ = _timed([*cli, "study", "tell", name, str(qid), text], env)
            rows["tell"].append((w, c))
        med = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
        diff_ask = statistics.median(a[0] - v[0] for a, v in zip(rows["ask"], rows["version"]))
        diff_tell = statistics.median(t[0] - v[0] for t, v in zip(rows["tell"], rows["version"]))
        cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
        cpu_ask = statistics.median(a[1] - v[1] for a, v in zip(rows["ask"], rows["version"]))
        cpu_tell = statistics.median(t[1] - v[1] for t, v in zip(rows["tell"], rows["version"]))
        print(
            f"| {method} | {med['version']:.3f} | {med['ask']:.3f} | {med['tell']:.3f} | "
            f"{diff_ask:.3f} | {diff_tell:.3f} | {cpu['version']:.3f} | {cpu['ask']:.3f} | "
            f"{cpu['tell']:.3f} | {cpu_ask:.3f} | {cpu_tell:.3f} |",
            flush=True,
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
