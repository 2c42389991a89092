"""Does the typo question name the value the person meant?

:mod:`benchmarks.typo_catch` counts how often a slip is asked about; this script reads the
questions themselves. It injects the same slips (``typo_catch.inject``) into the same sequences
(the GP draws of ``typo_catch.gp_sequences``; ``--library``: the library problems too), at the
last ``--last`` answers of each, and for every question asked through the prediction ("far from
what the ... values stored so far predict") reads the corrections it names: the first, and a
second one after "; or". It counts per slip kind the questions whose first named value is the
clean value typed, those where the second one is, and those naming another value (a person
following the question would store a wrong number), and the questions naming only the
prediction (a digit left out).

Run (one thread)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_naming.py --seeds 2
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_naming.py --seeds 1 --library
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import typo_catch as tc  # noqa: E402
from boloop.study.plausibility import MIN_ANSWERS, unusual_value  # noqa: E402

#: the corrections a question names: the first, and a second after "; or"
_FIRST = re.compile(r"\(([^?(]*)\? (about )?(\S+) would be")
_SECOND = re.compile(r"; or [^?]*\? (\S+)\)\.$")


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def count(seqs: list[dict], last: int) -> dict[str, Counter]:
    """counts[kind][column] over the questions asked through the prediction."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for s in seqs:
        X = s["X"]
        y = [float(tc.typed(v)) for v in s["y"]]
        rng = np.random.default_rng([11, s["seed"], len(s["group"])])
        for k in range(max(len(y) - last, MIN_ANSWERS), len(y)):
            for kind in tc.KINDS:
                got = tc.inject(kind, y[k], rng)
                if got is None:
                    continue
                w, text = got
                q = unusual_value(w, y[:k], "v", at=X[k], earlier_at=X[:k], typed=text)
                if q is None or "far from what" not in q:
                    continue
                c = counts[kind]
                c["asked"] += 1
                first = _FIRST.search(q)
                second = _SECOND.search(q)
                c["two named"] += second is not None
                if first.group(2):
                    c["prediction only"] += 1
                elif _number(first.group(3)) == y[k]:
                    c["clean first"] += 1
                elif second is not None and _number(second.group(1)) == y[k]:
                    c["clean second"] += 1
                else:
                    c["another value"] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--last", type=int, default=10, help="answers checked per sequence")
    ap.add_argument("--library", action="store_true", help="the library problems, not GP draws")
    args = ap.parse_args()
    if args.library:
        seqs = tc.library_sequences(args.seeds, args.budget)
    else:
        seqs = tc.gp_sequences(args.seeds, args.budget)
    counts = count(seqs, args.last)
    cols = ("asked", "clean first", "clean second", "another value", "prediction only", "two named")
    print(f"{'kind':6s} " + " ".join(f"{c:>15s}" for c in cols))
    total: Counter = Counter()
    for kind in tc.KINDS:
        total.update(counts[kind])
        print(f"{kind:6s} " + " ".join(f"{counts[kind][c]:15d}" for c in cols))
    print(f"{'all':6s} " + " ".join(f"{total[c]:15d}" for c in cols))


if __name__ == "__main__":
    main()
