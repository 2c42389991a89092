"""Fixed-seed COBOL traces for speed-ups that must not change a value (issue 12).

Record before a change, compare after every step::

    OMP_NUM_THREADS=1 python benchmarks/expert_speed_traces.py record /tmp/before.json
    OMP_NUM_THREADS=1 python benchmarks/expert_speed_traces.py compare /tmp/before.json

Twelve runs: the tutorial setting of ``expert_tutorial_speed.py`` (2-D Ackley, a = 1, 10
initial labels, T = 30, COBOL's defaults) for seeds 0-4, every query's point and answer written
as ``float.hex`` (so equal means equal to the bit), and ``contract_traces.run_one`` of COBOL on
``expert/ackley4``, ``expert/holder2``, ``expert/rosenbrock3`` at a = 2 and a = -2 and on
``expert/ackley4`` at a = 1 (25 evaluations, seed 0: records with label counts, recommendation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

PROBLEMS = (
    "expert/ackley4?a=2",
    "expert/ackley4?a=-2",
    "expert/holder2?a=2",
    "expert/holder2?a=-2",
    "expert/rosenbrock3?a=2",
    "expert/rosenbrock3?a=-2",
    "expert/ackley4?a=1",
)


def tutorial_trace(seed: int, T: int = 30) -> list[Any]:
    """Every query of one tutorial-setting run: kind, point (hex), answer, iteration."""
    from boloop.algorithms.expert import COBOL
    from boloop.queries import Label
    from expert_tutorial_speed import ackley2

    problem = ackley2()
    rng = np.random.default_rng(10_000 + seed)
    policy = COBOL(problem.space, seed)
    out: list[Any] = []
    while policy.iteration < T:
        q = policy.ask()
        answer: Any
        if isinstance(q, Label):
            answer = bool(problem.label(q, rng))
            shown: Any = answer
        else:
            answer = float(problem.value(q.x[None, :])[0])
            shown = answer.hex()
        out.append([type(q).__name__, [float(v).hex() for v in np.ravel(q.x)], shown])
        policy.tell(q.id, answer)
        out[-1].append(policy.iteration)
    return out


def record() -> dict[str, Any]:
    from contract_traces import run_one

    traces: dict[str, Any] = {}
    for seed in range(5):
        traces[f"tutorial {seed}"] = tutorial_trace(seed)
        print(f"tutorial {seed}", file=sys.stderr)
    for problem_id in PROBLEMS:
        traces[problem_id] = run_one(problem_id, "cobol", 0, 25)
        print(problem_id, file=sys.stderr)
    return traces


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("record", "compare"))
    p.add_argument("path")
    args = p.parse_args(argv)
    now = record()
    if args.mode == "record":
        Path(args.path).write_text(json.dumps(now))
        print(f"recorded {len(now)} traces to {args.path}")
        return 0
    before = json.loads(Path(args.path).read_text())
    differ = [k for k in before if before[k] != now.get(k)]
    for k in differ:
        print(f"DIFFERS: {k}")
    print(f"{len(before) - len(differ)} of {len(before)} traces identical")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
