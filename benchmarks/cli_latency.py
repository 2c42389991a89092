"""Latency of ``boloop study ask`` / ``tell`` on studies with many answers (issue 15).

For each family's main method on the family's toy problem, a study with ``--answers`` answers
(answers from the problem's oracle, through the Python API), then ``--repeats`` rounds of three
timed command-line calls, each a fresh process as a person or a lab script would run them:
``boloop --version`` (the floor: Python start-up and the argument parser), ``boloop study ask
NAME`` and ``boloop study tell NAME ID ANSWER`` (the oracle's answer to that query). Reported:
medians of the wall time and of the CPU time (user + system, less sensitive to other load) and
the median of ``ask - version`` and ``tell - version``: the issue's target is 0.3 s on a quiet
machine; the same differences of CPU times are the figure to read on a loaded machine. The
slowest ``ask - version`` and ``tell - version`` (wall) show the calls that refit
hyperparameters (the expert family refits once its values grew by a tenth: at 300 answers
about one call in 25-28; ``--repeats 30`` sees one).
``--blas-threads N`` runs the same calls with ``OMP_NUM_THREADS`` etc. set to N (the
user's own setting wins over the CLI's default of 1), to see what threading costs under load.

Bytecode: the calls run as an installed boloop does, from compiled bytecode (``.pyc``), written
by the untimed first round to a temporary ``PYTHONPYCACHEPREFIX``, also where the environment
sets ``PYTHONDONTWRITEBYTECODE`` (then every call would compile boloop's sources: some 50 ms of
CPU more per call on the development machine). ``--no-bytecode`` measures that instead.

``--src A B``: the same calls with two (or more) source trees of boloop (``PYTHONPATH=A/src``...),
interleaved call by call, each on its own copy of the studies (a snapshot is only reused by the
code that wrote it): a before/after comparison measured in one run on the same machine.

Run:  nice -n 5 .venv/bin/python benchmarks/cli_latency.py [--answers 300] [--repeats 7]
      [--methods randomized-straddle mr-lpf m-safeopt cobol] [--storage sqlite:///x.db]
      [--src /path/to/before /path/to/after [--fill-per-tree]]

``--fill-per-tree``: with ``--src``, each tree fills its own studies through the Python API (in a
subprocess with that tree's code) instead of copying one set: needed when the trees' methods
propose different queries (a study is refused by code whose replay gives other queries), e.g.
a change of a method's default; the studies then differ in their points, not in their size.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
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
    # the preference family's study default (issue 17), besides the paper's MR-LPF
    "eubo-regret": ("preference/toy", {}),
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
    """The problem oracle's answer to open query ``qid``, read from the study's log (no policy
    is loaded: the log may have been written by another source tree)."""
    from boloop.problems import get
    from boloop.queries import query_from_dict
    from boloop.study.answers import answer_text
    from boloop.study.sqlite_log import open_sqlite_log

    log = open_sqlite_log(url)
    assert log is not None, url
    events = log.events(log.study_id(name))
    asked = [e for e in events if e.kind == "asked" and e.query_id == qid]
    assert asked, (name, qid)
    query = query_from_dict(asked[-1].payload["query"])
    answer = get(CASES[method][0]).answer(query, rng)
    return answer_text(query.kind, answer).replace(" ", "")


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--methods", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--storage", default=None, help="reuse studies in this storage")
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument(
        "--no-bytecode", action="store_true", help="compile boloop's sources in every call"
    )
    ap.add_argument(
        "--src", nargs="+", default=None, help="source trees to compare (PYTHONPATH=TREE/src)"
    )
    ap.add_argument(
        "--fill-per-tree",
        action="store_true",
        help="with --src: each tree fills its own studies (needed when the trees' methods "
        "propose differently: a study only loads under code that replays it)",
    )
    if len(sys.argv) == 5 and sys.argv[1] == "--fill-only":  # internal: --fill-only URL METHOD N
        _fill(sys.argv[2], f"lat-{sys.argv[3]}", sys.argv[3], int(sys.argv[4]))
        return
    args = ap.parse_args()

    from boloop.simulate import oracle_rng

    tmp = tempfile.mkdtemp(prefix="boloop-cli-latency-")
    base = args.storage or f"sqlite:///{os.path.join(tmp, 'latency.db')}"
    env = {k: v for k, v in os.environ.items() if k not in BLAS}
    if args.blas_threads is not None:
        env.update({k: str(args.blas_threads) for k in BLAS})
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    cli = _boloop()
    from boloop.study import list_studies

    have = {r["name"] for r in list_studies(base)} if args.storage else set()
    for method in args.methods if not (args.src and args.fill_per_tree) else ():
        if f"lat-{method}" not in have:
            _fill(base, f"lat-{method}", method, args.answers)
    trees: dict[str, tuple[str, dict[str, str]]] = {}  # label -> (storage url, environment)
    if args.src:
        assert base.startswith("sqlite:///"), "--src needs a SQLite storage (copied per tree)"
        for i, src in enumerate(args.src):
            label = os.path.basename(os.path.normpath(src)) or f"tree{i}"
            label = label if label not in trees else f"{label}-{i}"
            db = os.path.join(tmp, f"tree{i}.db")
            tree_env = dict(env, PYTHONPATH=os.path.join(os.path.abspath(src), "src"))
            if args.fill_per_tree:  # each tree answers its own study (its own queries)
                for method in args.methods:
                    subprocess.run(
                        [sys.executable, os.path.abspath(__file__), "--fill-only",
                         f"sqlite:///{db}", method, str(args.answers)],
                        env=dict(tree_env, OMP_NUM_THREADS="1"),
                        check=True,
                    )  # fmt: skip
            else:
                # the storage runs in WAL mode: a file copy can miss the writes still in the
                # -wal file; SQLite's backup copies the database as a reader sees it
                with (
                    sqlite3.connect(base[len("sqlite:///") :]) as src_db,
                    sqlite3.connect(db) as dst,
                ):
                    src_db.backup(dst)
            trees[label] = (f"sqlite:///{db}", tree_env)
        cli = [sys.executable, "-m", "boloop.cli"]
    else:
        trees[""] = (base, env)
    for url, tree_env in trees.values():
        tree_env["BOLOOP_STORAGE"] = url
    print(
        f"{args.answers} answers, {args.repeats} repeats, BLAS threads "
        f"{args.blas_threads or 'CLI default (1)'}, "
        f"{'no bytecode (sources compiled per call)' if args.no_bytecode else 'bytecode cached'}"
        f", load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "| method | version s | ask s | tell s | ask - version s | tell - version s "
        "| CPU version s | CPU ask s | CPU tell s | CPU ask - version s | CPU tell - version s "
        "| slowest ask - version s | slowest tell - version s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for method in args.methods:
        name = f"lat-{method}"
        rngs = {label: oracle_rng(1) for label in trees}  # the same answers in every tree
        rows: dict[str, dict[str, list[tuple[float, float]]]] = {
            label: {"version": [], "ask": [], "tell": []} for label in trees
        }
        # one untimed round per tree: pays one-off costs (a first snapshot under this code)
        for rnd in range(args.repeats + 1):
            for label, (url, tree_env) in trees.items():
                timed = rows[label] if rnd else {"version": [], "ask": [], "tell": []}
                timed["version"].append(_timed([*cli, "--version"], tree_env)[:2])
                w, c, out = _timed([*cli, "study", "ask", name, "--json"], tree_env)
                timed["ask"].append((w, c))
                qid = int(out.split('"id": ')[1].split(",")[0])
                text = _oracle_text(url, name, method, qid, rngs[label])
                w, c, _ = _timed([*cli, "study", "tell", name, str(qid), text], tree_env)
                timed["tell"].append((w, c))
        for label, timed in rows.items():
            med = {k: _median([w for w, _ in v]) for k, v in timed.items()}
            cpu = {k: _median([c for _, c in v]) for k, v in timed.items()}
            d = {
                (k, i): _median([a[i] - v[i] for a, v in zip(timed[k], timed["version"])])
                for k in ("ask", "tell")
                for i in (0, 1)
            }
            # the slowest call of each kind (wall): a step that refits its hyperparameters
            worst = {
                k: max(a[0] - v[0] for a, v in zip(timed[k], timed["version"]))
                for k in ("ask", "tell")
            }
            print(
                f"| {method}{' ' + label if label else ''} | {med['version']:.3f} | "
                f"{med['ask']:.3f} | {med['tell']:.3f} | {d['ask', 0]:.3f} | {d['tell', 0]:.3f} | "
                f"{cpu['version']:.3f} | {cpu['ask']:.3f} | {cpu['tell']:.3f} | "
                f"{d['ask', 1]:.3f} | {d['tell', 1]:.3f} | {worst['ask']:.3f} | "
                f"{worst['tell']:.3f} |",
                flush=True,
            )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
