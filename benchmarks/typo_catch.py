"""How often does the typo question catch a slip, and how often does it ask about a clean value?

The question (:func:`boloop.study.plausibility.unusual_value`) is asked on every typed
measurement. This benchmark replays realistic sequences of measured values, one output at a
time, and at every answer after the first :data:`~boloop.study.plausibility.MIN_ANSWERS`
checks (a) the value as typed (clean: a question is a false question) and (b) the same value
with one typo injected (a question is a catch), against the earlier values of that output:

* ``x10`` / ``/10``: a misplaced decimal point;
* ``sign``: the sign flipped (values within 1% of the largest magnitude of zero are skipped);
* keystroke slips of the value as a person types it (4 significant digits, positional, the
  text passed to the rule as typed): ``drop`` one digit left out, ``dup`` one digit typed
  twice, ``swap`` two adjacent different digits swapped, ``key`` one digit replaced by another
  (a wrong key). Each is counted in two columns: ``drop`` where it changes the value by more
  than a factor 2, ``drop~`` where it changes it less (dropping the last digit of 723.4: only a
  prediction good to a part in a thousand can see it, and none needs to).

Sequences (``--seeds`` each; every value rounded to 4 significant digits as typed):

* ``levelset`` / ``expert`` / ``safe``: every library problem of the families with numeric
  outputs, run by the family's proposed method for ``--budget`` iterations (the safe family's
  f and g are two outputs; the expert family's evaluations only);
* ``gp-offset``: a GP draw (Matern-5/2, random lengthscale, 1-3 axes, ``--budget`` random
  points; ``8 * --seeds`` draws per kind, measurement noise sd 0.03) shifted well away from
  zero, like a hardness of 500-800 HV;
* ``gp-zero``: a GP draw crossing zero;
* ``gp-decades``: ``0.37 * 10 ** (3 * draw / (max - min of the draw))``: three decades;
* ``floor``: a reading with a floor, a safe study's g read at its detection limit (equal
  values, :mod:`boloop.study.plausibility`): settings on a grid climbing one axis as a safe
  study climbs its dose, about one in four a setting measured before, the value
  ``max(0.05, 0.02 * 10 ** (2 * x0 + 0.3 * draw))`` with 2% noise above the floor, typed to
  2 significant digits (coarse readings: a keystroke slip lands on the floor value more
  often than with 4; ``8 * --seeds`` sequences, never cached).

Typos are drawn with a generator seeded by the sequence (no global state): a run is repeatable.
Rows per group, then pooled: ``library`` (the three families), ``gp draws`` (zero and decades;
the offset draws are caught by either rule), ``floor`` and ``all`` (every group but ``floor``,
as before it was added).

Rules compared: ``range`` (the range rule: the value only), ``before`` (the range rule, then
the prediction at the value's setting explained by a decimal point or a sign only: the rule
before the keystroke slips, the same questions as it asked), ``after`` (every slip of
:data:`~boloop.study.plausibility.SLIPS`, the text as typed) and ``after, value`` (the same
with the number alone, as a JSON number reaches the API: its shortest text); ``--tails``:
``after`` far at other tails of Student's t. With ``--kinds`` also ``before+<slip>`` (one
keystroke slip added: what it catches and what it costs) and ``far`` (any correction counts
as near: every value far from the prediction is asked about), and, per pool, the clean values
far from the prediction (the range rule silent) and how many of them each rule asks about:
the false questions the slips' corrections let through (module docstring of
:mod:`boloop.study.plausibility`). CPU time per check (``time.process_time``, median of
``--repeats``): on the last answer of every sequence, and on a smooth 2-axis sequence with 10,
40, 150 and 300 earlier values.

Run (one thread)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 3 --budget 40 --kinds
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 2 --budget 80 --tails 1e-4 1e-5
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/typo_catch.py --seeds 3 --budget 40 --first-seed 10 --kinds
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
KINDS = ("x10", "/10", "sign", "drop", "dup", "swap", "key")
#: the decimal and sign slips (always counted); the others are keystroke slips of the digits
DECIMAL = ("x10", "/10", "sign")


def typed(y: float, digits: int = 4) -> str:
    """``y`` as a person types it: ``digits`` significant digits, positional."""
    return np.format_float_positional(
        y, precision=digits, unique=False, fractional=False, trim="-"
    )


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


def floor_sequences(seeds: int, n: int, first: int = 0) -> list[dict]:
    """``floor`` (module docstring): a safe study's g read at its detection limit."""
    out = []
    levels, others = 6, 5
    for seed in range(first * 8, (first + seeds) * 8):
        rng = np.random.default_rng([11, seed])
        d = int(rng.integers(1, 3))
        X: list[list[float]] = []
        for i in range(n):
            if X and rng.random() < 0.25:  # a setting measured again
                X.append(list(X[int(rng.integers(len(X)))]))
                continue
            # the first axis climbs its levels over the run (a dose), the others anywhere
            top = min(levels - 1, (levels * i) // n + int(rng.integers(0, 2)))
            level = int(rng.integers(max(0, top - 1), top + 1))
            X.append([level / (levels - 1)]
                     + [int(rng.integers(others)) / (others - 1) for _ in range(d - 1)])  # fmt: skip
        A = np.asarray(X)
        ell = float(rng.uniform(0.3, 0.8))
        r = np.sqrt(((A[:, None] - A[None]) ** 2).sum(-1)) / ell
        K = (1 + math.sqrt(5) * r + 5 * r * r / 3) * np.exp(-math.sqrt(5) * r)
        draw = np.linalg.cholesky(K + 1e-8 * np.eye(n)) @ rng.standard_normal(n)
        g = 0.02 * 10.0 ** (2.0 * A[:, 0] + 0.3 * draw)
        g = g * 10.0 ** (0.0086 * rng.standard_normal(n))  # 2% noise
        y = np.where(g < 0.05, 0.05, g)
        out.append({"group": "floor", "name": "floor", "seed": seed, "X": X, "y": y.tolist(),
                    "digits": 2})  # fmt: skip
    return out


# -- typos -------------------------------------------------------------------------------------
def inject(
    kind: str, y: float, rng: np.random.Generator, digits: int = 4
) -> tuple[float, str] | None:
    """``y`` with one typo of ``kind`` and the text typed (``digits`` significant digits), or
    None when that typo makes no slip here (the value unchanged, or zero)."""
    text = typed(y, digits)
    if kind == "x10":
        return float(typed(y * 10.0, digits)), typed(y * 10.0, digits)
    if kind == "/10":
        return float(typed(y / 10.0, digits)), typed(y / 10.0, digits)
    if kind == "sign":
        return (-y, text[1:] if text.startswith("-") else "-" + text) if y != 0.0 else None
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if kind == "swap":
        # two adjacent different digits (the point is the decimal slips' business)
        digits = [i for i in digits if i + 1 < len(text) and text[i + 1].isdigit()
                  and text[i + 1] != text[i]]  # fmt: skip
        if not digits:
            return None
    i = int(rng.choice(digits))
    if kind == "drop":
        slip = text[:i] + text[i + 1 :]
    elif kind == "dup":
        slip = text[: i + 1] + text[i:]
    elif kind == "swap":
        slip = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    else:  # "key": another digit typed for this one
        other = [d for d in "0123456789" if d != text[i]]
        slip = text[:i] + str(rng.choice(other)) + text[i + 1 :]
    try:
        w = float(slip)
    except ValueError:
        return None
    if w == 0.0 or y == 0.0 or w == y:
        return None
    return w, slip


def large(kind: str, y: float, w: float) -> bool:
    """Does the slip change the value by more than a factor 2 (the sign flip and the decimal
    slips always count)?"""
    return kind in DECIMAL or abs(math.log10(abs(w / y))) >= math.log10(2.0)


# -- rules -------------------------------------------------------------------------------------
def current(v: float, text: str, prev: list[float], X: list, x: list) -> bool:
    """The range rule alone (the value only)."""
    return unusual_value(v, prev) is not None


def with_setting(
    tail: float = plausibility.TAIL,
    slips: tuple[str, ...] = plausibility.SLIPS,
    near: float = plausibility.NEAR,
    text: bool = True,
):
    """The range rule and the prediction at the value's setting, far at Student's ``tail``,
    explained by the ``slips`` within ``near`` predictive standard deviations, the keystroke
    slips edited on the typed text (``text``) or on the value's shortest text."""

    def rule(v: float, typed_text: str, prev: list[float], X: list, x: list) -> bool:
        saved = plausibility.TAIL, plausibility.SLIPS, plausibility.NEAR
        plausibility.TAIL, plausibility.SLIPS, plausibility.NEAR = tail, slips, near
        try:
            return (
                unusual_value(v, prev, at=x, earlier_at=X, typed=typed_text if text else None)
                is not None
            )
        finally:
            plausibility.TAIL, plausibility.SLIPS, plausibility.NEAR = saved

    return rule


#: the slips of the rule before the keystroke slips (a decimal point, a sign)
BEFORE = ("point", "sign")
#: the keystroke slips added (plausibility.SLIPS)
KEYSTROKES = tuple(k for k in plausibility.SLIPS if k not in BEFORE)


def rules(tails: list[float], kinds: bool) -> dict:
    out = {
        "range": current,
        "before": with_setting(slips=BEFORE),
        "after": with_setting(),
        "after, value": with_setting(text=False),
    }
    out.update({f"after {t:g}": with_setting(t) for t in tails if t != plausibility.TAIL})
    if kinds:
        # what each keystroke slip adds alone, and every value far from the prediction (any
        # correction near: the clean column counts the far values the range rule lets through)
        out.update({f"before+{k}": with_setting(slips=(*BEFORE, k)) for k in KEYSTROKES})
        out["far"] = with_setting(slips=("point",), near=math.inf)
    return out


# -- the measurement ---------------------------------------------------------------------------
def _reuse_fits(fit):
    """``fit`` (the rule's GP fit) remembering its last few fits: every typo and rule of one
    answer fits the same earlier values (a speed-up of the benchmark only; same results)."""
    memo: dict = {}

    def fit_again(U, t, *args):
        key = (U.shape, U.tobytes(), t.tobytes(), args)
        if key not in memo:
            if len(memo) > 8:
                memo.clear()
            memo[key] = fit(U, t, *args)
        return memo[key]

    return fit_again


def evaluate(seqs: list[dict], rules: dict, seed: int) -> dict:
    fit, plausibility.fit_leave_one_out = (
        plausibility.fit_leave_one_out,
        _reuse_fits(plausibility.fit_leave_one_out),
    )
    try:
        return _evaluate(seqs, rules, seed)
    finally:
        plausibility.fit_leave_one_out = fit


def _evaluate(seqs: list[dict], rules: dict, seed: int) -> dict:
    """counts[group][rule][column] = [asked, checked]; columns: ``clean`` and each typo kind,
    the keystroke kinds split into ``kind`` (a change of more than a factor 2) and ``kind~``."""
    counts: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
    for s in seqs:
        digits = s.get("digits", 4)
        y = [float(typed(v, digits)) for v in s["y"]]
        X = s["X"]
        rng = np.random.default_rng([seed, s["seed"], zlib.crc32(s["name"].encode())])
        for i in range(MIN_ANSWERS, len(y)):
            prev, v = y[:i], y[i]
            slips = {"clean": (v, typed(v, digits))}
            for kind in KINDS:
                w = inject(kind, v, rng, digits)
                if kind == "sign" and abs(v) < 0.01 * max(abs(p) for p in prev):
                    w = None
                if w is not None:
                    slips[kind if large(kind, v, w[0]) else kind + "~"] = w
            for name, rule in rules.items():
                for column, (w, text) in slips.items():
                    c = counts[s["group"]][name][column]
                    c[0] += bool(rule(w, text, prev, X[:i], X[i]))
                    c[1] += 1
    return counts


def timing(seqs: list[dict], rules: dict, repeats: int) -> dict:
    """Median CPU seconds per check of each rule, on the last answer of every sequence."""
    out = {}
    cases = []
    for s in seqs:
        last = typed(s["y"][-1], s.get("digits", 4))
        cases.append((float(last), last, s["y"][:-1], s["X"][:-1], s["X"][-1]))
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
        v = float(y[-1]) * 10.0
        case = (v, repr(v), y[:-1].tolist(), X[:-1].tolist(), X[-1].tolist())
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
        default=[],
        help="other tail probabilities of the prediction rule to compare",
    )
    ap.add_argument(
        "--kinds",
        action="store_true",
        help="also each keystroke slip added alone, and the clean values far from the prediction",
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
    seqs = seqs + floor_sequences(args.seeds, args.budget, args.first_seed)
    rs = rules(args.tails, args.kinds)
    counts = evaluate(seqs, rs, seed=0)
    cols = ("clean", *DECIMAL, *(k + m for k in KINDS if k not in DECIMAL for m in ("", "~")))
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
        "floor": [g for g in counts if g == "floor"],
        "all": [g for g in counts if g != "floor"],
    }
    for pool, groups in pools.items():
        for name in rs:
            cells = []
            for c in cols:
                a = sum(counts[g][name][c][0] for g in groups)
                n = sum(counts[g][name][c][1] for g in groups)
                cells.append(f"{100 * a / max(n, 1):5.1f}% /{n:4d}")
            print(f"{pool:11} {name:16} " + " ".join(cells))
    if "far" in rs:
        # the false-question cost: clean values far from the prediction (the range rule silent)
        # and how many of them each rule asks about
        for pool, groups in pools.items():
            n = {r: sum(counts[g][r]["clean"][0] for g in groups) for r in rs}
            far = n["far"] - n["range"]
            asked = ", ".join(f"{r} {n[r] - n['range']}" for r in rs if r not in ("far", "range"))
            print(f"{pool}: {far} clean values far from the prediction; asked: {asked}")
    timed = {k: rs[k] for k in ("range", "before", "after")}
    for name, sec in timing(seqs, timed, args.repeats).items():
        print(f"CPU per check, {name}: {1e3 * sec:.3f} ms (median of {args.repeats})")
    for (name, n), sec in timing_by_n(timed, args.repeats).items():
        print(f"CPU per check with {n} earlier values, {name}: {1e3 * sec:.3f} ms")


if __name__ == "__main__":
    main()
