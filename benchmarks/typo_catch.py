"""How often does the typo question catch a slip, and how often does it ask about a clean value?

The question (:func:`boloop.study.plausibility.unusual_value`) is asked on every typed
measurement. This benchmark replays realistic sequences of measured values, one output at a
time, and at every answer after the first :data:`~boloop.study.plausibility.MIN_ANSWERS`
checks (a) the value as typed (clean: a question is a false question) and (b) the same value
with one typo injected (a question is a catch), against the earlier values of that output:

* ``x10`` / ``/10``: a misplaced decimal point;
* ``drop`` / ``dup``: one digit of the value as a person types it (4 significant digits,
  positional) dropped or typed twice; only slips that change the value by more than a factor
  2 are counted (dropping the last digit of 723.4 is no slip any rule should see);
* ``sign``: the sign flipped (values within 1% of the largest magnitude of zero are skipped).

Sequences (``--seeds`` each; every value rounded to 4 significant digits as typed):

* ``levelset`` / ``expert`` / ``safe``: every library problem of the families with numeric
  outputs, run by the family's proposed method for ``--budget`` iterations (the safe family's
  f and g are two outputs; the expert family's evaluations only);
* ``gp-offset``: a GP draw (Matern-5/2, random lengthscale, 1-3 axes, ``--budget`` random
  points; ``8 * --seeds`` draws per kind, measurement noise sd 0.03) shifted well away from
  zero, like a hardness of 500-800 HV;
* ``gp-zero``: a GP draw crossing zero;
* ``gp-decades``: ``0.37 * 10 ** (3 * draw / (max - min of the draw))``: three decades.

Typos are drawn with a generator seeded by the sequence (no global state): a run is repeatable.
Rows per group, then pooled: ``library`` (the three families), ``gp draws`` (zero and decades;
the offset draws are caught by either rule) and ``all``.

Rules compared: ``current`` (the range rule: the value only) and ``setting <tail>`` (the range
rule, then the prediction at the value's setting, far at Student's t ``tail``: the library's
:data:`~boloop.study.plausibility.TAIL` and the ``--tails`` around it; module docstring of
:mod:`boloop.study.plausibility`). CPU time per check (``time.process_time``, median of
``--repeats``): on the last answer of every sequence, and on a smooth 2-axis sequence with 10,
40, 150 and 300 earlier values.

Run (one thread)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 3 --budget 40
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 2 --budget 80 --tails
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 3 --budget 40 --first-seed 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
import zlib
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.study import plausibility  # noqa: E402
from boloop.study.plausibility import MIN_ANSWERS, unusual_value  # noqa: E402

PROPOSED = {"levelset": "randomized-straddle", "expert": "cobol", "safe": "m-safeopt"}
KINDS = ("x10", "/10", "drop", "dup", "sign")


def typed(y: float) -> str:
    """``y`` as a person types it: 4 significant digits, positional."""
    return np.format_float_positional(y, precision=4, unique=False, fractional=False, trim="-")


# -- sequences ---------------------------------------------------------------------------------
def library_sequences(seeds: int, budget: int, first: int = 0) -> list[dict]:
    from boloop.algorithms.registry import build_policy
    from boloop.problems import registry
    from boloop.simulate import simulate

    out = []
    for family, method in PROPOSED.items():
        for entry in registry.list(family):
            for seed in range(first, first + seeds):
                problem = registry.get(entry.id)
                policy = build_policy(problem.policy_spec(method, seed))
                trace = simulate(policy, problem, budget, seed)
                rows = [r for r in trace.records if r["kind"] == "evaluate"]
                X = [r["points"][0] for r in rows]
                answers = [r["answer"] for r in rows]
                outputs = sorted(answers[0]) if isinstance(answers[0], dict) else [None]
                for o in outputs:
                    y = [a[o] if o else a for a in answers]
                    name = entry.id + (f":{o}" if o else "")
                    out.append({"group": family, "name": name, "seed": seed, "X": X, "y": y})
    return out


def gp_sequences(seeds: int, n: int, first: int = 0) -> list[dict]:
    out = []
    for group in ("gp-offset", "gp-zero", "gp-decades"):
        for seed in range(first * 8, (first + seeds) * 8):
            rng = np.random.default_rng([7, seed, len(group)])
            d = int(rng.integers(1, 4))
            ell = float(rng.uniform(0.15, 0.6)) * math.sqrt(d)
            X = rng.uniform(size=(n, d))
            r = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)) / ell
            K = (1 + math.sqrt(5) * r + 5 * r * r / 3) * np.exp(-math.sqrt(5) * r)
            f = np.linalg.cholesky(K + 1e-8 * np.eye(n)) @ rng.standard_normal(n)
            f = f + 0.03 * rng.standard_normal(n)  # measurement noise
            if group == "gp-offset":
                y = 650.0 + 60.0 * f
            elif group == "gp-zero":
                y = 3.0 * f
            else:
                y = 0.37 * 10.0 ** (3.0 * f / max(np.ptp(f), 1e-9))
            out.append({"group": group, "name": group, "seed": seed, "X": X.tolist(),
                        "y": y.tolist()})  # fmt: skip
    return out


# -- typos -------------------------------------------------------------------------------------
def inject(kind: str, y: float, rng: np.random.Generator) -> float | None:
    """``y`` with one typo of ``kind``, or None when that typo makes no slip here."""
    if kind == "x10":
        return float(typed(y * 10.0))
    if kind == "/10":
        return float(typed(y / 10.0))
    if kind == "sign":
        return -y if y != 0.0 else None
    text = typed(y)
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    i = int(rng.choice(digits))
    slip = text[:i] + text[i + 1 :] if kind == "drop" else text[: i + 1] + text[i:]
    try:
        w = float(slip)
    except ValueError:
        return None
    if w == 0.0 or y == 0.0 or abs(math.log10(abs(w / y))) < math.log10(2.0):
        return None
    return w


# -- rules -------------------------------------------------------------------------------------
def current(v: float, prev: list[float], X: list, x: list) -> bool:
    """The range rule alone (the value only)."""
    return unusual_value(v, prev) is not None


def with_setting(tail: float = plausibility.TAIL):
    """The range rule and the prediction at the value's setting, far at Student's ``tail``."""

    def rule(v: float, prev: list[float], X: list, x: list) -> bool:
        saved, plausibility.TAIL = plausibility.TAIL, tail
        try:
            return unusual_value(v, prev, at=x, earlier_at=X) is not None
        finally:
            plausibility.TAIL = saved

    return rule


def rules(tails: list[float]) -> dict:
    out = {"current": current, f"setting {plausibility.TAIL:g}": with_setting()}
    out.update({f"setting {t:g}": with_setting(t) for t in tails if t != plausibility.TAIL})
    return out


# -- the measurement ---------------------------------------------------------------------------
def evaluate(seqs: list[dict], rules: dict, seed: int) -> dict:
    """counts[group][rule][kind] = [asked, checked]"""
    counts: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
    for s in seqs:
        y = [float(typed(v)) for v in s["y"]]
        X = s["X"]
        rng = np.random.default_rng([seed, s["seed"], zlib.crc32(s["name"].encode())])
        for i in range(MIN_ANSWERS, len(y)):
            prev, v = y[:i], y[i]
            slips = {"clean": v}
            for kind in KINDS:
                w = inject(kind, v, rng)
                if kind == "sign" and abs(v) < 0.01 * max(abs(p) for p in prev):
                    w = None
                if w is not None:
                    slips[kind] = w
            for name, rule in rules.items():
                for kind, w in slips.items():
                    c = counts[s["group"]][name][kind]
                    c[0] += bool(rule(w, prev, X[:i], X[i]))
                    c[1] += 1
    return counts


def timing(seqs: list[dict], rules: dict, repeats: int) -> dict:
    """Median CPU seconds per check of each rule, on the last answer of every sequence."""
    out = {}
    cases = [(float(s["y"][-1]), s["y"][:-1], s["X"][:-1], s["X"][-1]) for s in seqs]
    for name, rule in rules.items():
        runs = []
        for _ in range(repeats):
            t = time.process_time()
            for case in cases:
                rule(*case)
            runs.append((time.process_time() - t) / len(cases))
        out[name] = statistics.median(runs)
    return out


def timing_by_n(rules: dict, repeats: int, sizes: tuple[int, ...] = (10, 40, 150, 300)) -> dict:
    """Median CPU seconds per check with ``n`` earlier values of a smooth 2-axis sequence."""
    rng = np.random.default_rng(1)
    out = {}
    for n in sizes:
        X = rng.uniform(size=(n + 1, 2))
        y = 10.0 ** (np.sin(6.0 * X[:, 0]) + X[:, 1])
        case = (float(y[-1]) * 10.0, y[:-1].tolist(), X[:-1].tolist(), X[-1].tolist())
        for name, rule in rules.items():
            runs = []
            for _ in range(repeats):
                t = time.process_time()
                rule(*case)
                runs.append(time.process_time() - t)
            out[name, n] = statistics.median(runs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="seeds FIRST.. of the runs (and GP draws 8 FIRST..): other sequences than the rule "
        "was chosen on",
    )
    ap.add_argument("--cache", type=Path, help="sequences JSON: read if it exists, else written")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--tails",
        type=float,
        nargs="*",
        default=[1e-4, 1e-5],
        help="other tail probabilities of the prediction rule to compare",
    )
    args = ap.parse_args()
    if args.cache and args.cache.exists():
        seqs = json.loads(args.cache.read_text())
    else:
        seqs = library_sequences(args.seeds, args.budget, args.first_seed) + gp_sequences(
            args.seeds, args.budget, args.first_seed
        )
        if args.cache:
            args.cache.write_text(json.dumps(seqs))
    rs = rules(args.tails)
    counts = evaluate(seqs, rs, seed=0)
    cols = ("clean", *KINDS)
    print(f"{'group':11} {'rule':16} " + " ".join(f"{c:>12}" for c in cols))
    for group in counts:
        for name in rs:
            cells = []
            for c in cols:
                a, n = counts[group][name][c]
                cells.append(f"{100 * a / max(n, 1):5.1f}% /{n:4d}")
            print(f"{group:11} {name:16} " + " ".join(cells))
    pools = {
        "library": [g for g in counts if g in PROPOSED],
        "gp draws": [g for g in counts if g.startswith("gp-") and g != "gp-offset"],
        "all": list(counts),
    }
    for pool, groups in pools.items():
        for name in rs:
            cells = []
            for c in cols:
                a = sum(counts[g][name][c][0] for g in groups)
                n = sum(counts[g][name][c][1] for g in groups)
                cells.append(f"{100 * a / max(n, 1):5.1f}% /{n:4d}")
            print(f"{pool:11} {name:16} " + " ".join(cells))
    for name, sec in timing(seqs, rs, args.repeats).items():
        print(f"CPU per check, {name}: {1e3 * sec:.3f} ms (median of {args.repeats})")
    for (name, n), sec in timing_by_n(rs, args.repeats).items():
        print(f"CPU per check with {n} earlier values, {name}: {1e3 * sec:.3f} ms")


if __name__ == "__main__":
    main()
