"""What a level-set stall looks like, and how often candidate stall signals fire in vain.

Runs ``randomized-straddle`` (or ``--method``) with the kernel unknown (``kernel=None``: the
learned default a study gets) and records, after every answer, quantities the policy already has:

* ``f``: the F-score of the estimated set (the problem's tracker, against the truth);
* ``flips``: candidates whose estimated class (``mu >= theta``) changed with this answer;
* ``amb``: candidates still ambiguous, ``|mu - theta| < 2 sigma`` (the unclassified set);
* ``rep``: whether the query was at a candidate measured before;
* ``oc``: whether the query's ``sigma_{t-1}(x_t)`` was below the fitted noise sd (the policy's
  ``overconfident_iterations``);
* ``sdn`` and ``dls``: the query's ``sigma_{t-1}(x_t)`` over the fitted noise sd, and its
  distance to the nearest measured setting in length-scales (read at the query, before the
  answer);
* ``kc``, ``kx`` and ``rc``: the policy's ``known_unchanged`` (the count behind the notice:
  queries in a row at measured settings or at settings with ``sigma_{t-1}(x_t) < sigma_n``, the
  map unchanged but for the answers' noise at undecided candidates), the same count with the
  map exactly unchanged between consecutive queries (``kx``, computed here: the notice before
  the jitter-robust map test) and ``repeats_unchanged`` (the first notice's count: repeats
  only), and ``stall``, whether the notice stood after the answer;
* ``dflips``: candidates that changed side with the answer while decided
  (``|mu - theta| >= 2 sigma``) before or after it.

Then, per candidate signal and window ``W``, the first answer at which it fires after the
initial design, and what the run did afterwards: **improved** (F at the end at least 0.02 above
F when it fired: a false alarm), **stuck** (no such gain and F below 0.9 when it fired: a true
stall), **settled** (no gain, F >= 0.9: the map was done). Runs in which it never fires are split
the same way by their whole course (a stuck run it missed).

Problems: every level-set problem of the registry (the three 5-D boxes with ``n_eval=5000`` and 3
seeds, for time), ``benchmarks/levelset_stall_problems.py`` (trend plus missed bumps), the
made-up grids of ``benchmarks/levelset_peers.py`` and ``random/k``: random 31 x 31 maps of
``[0, 1]^2`` (a trend of random direction and slope 0-1.5 plus 1-3 Gaussian bumps of height
0.5-1.2 and sd 0.03-0.2, threshold at a random 60-90% quantile, noise sd 2% of the values' sd),
one map per ``k``. ``random-box/k`` (``--random-box``) is the map of ``random/k`` on the box
``[0, 1]^2`` itself. ``interleave/furnace`` and ``interleave/furnace-fine`` (not in the default
set) are the cases written down for a stall whose queries interleave new settings
(``levelset_stall_problems.py``). ``compare`` pairs runs without and with ``--remedy``
(measurements added where the stall notice points). The runs of
``docs/reproductions/levelset.md`` ("When the map stops changing"; one thread, JSON lines)::

    OMP_NUM_THREADS=1 python benchmarks/levelset_stall.py record --out runs.jsonl \\
        --steps 150 --seeds 0-9 --box-seeds 0-2 --random 60
    OMP_NUM_THREADS=1 python benchmarks/levelset_stall.py record --out heldout.jsonl \\
        --steps 150 --problems levelset/gp-sample --seeds 10-29 --random 100 --random-from 60
    OMP_NUM_THREADS=1 python benchmarks/levelset_stall.py record --out remedy.jsonl \\
        --steps 150 --problems stall/two-bumps levelset/toy user/needles1d --seeds 0-9 \\
        --random 160 --remedy 3
    OMP_NUM_THREADS=1 python benchmarks/levelset_stall.py record --out interleave.jsonl \
        --steps 150 --problems interleave/furnace interleave/furnace-fine --seeds 0-9 --random 0
    OMP_NUM_THREADS=1 python benchmarks/levelset_stall.py record --out box.jsonl \
        --steps 150 --problems --random 0 --random-box 20
    python benchmarks/levelset_stall.py analyze runs.jsonl --windows 15,20,25,30
    cat runs.jsonl heldout.jsonl > all.jsonl
    python benchmarks/levelset_stall.py compare all.jsonl remedy.jsonl
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

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from boloop.algorithms import make_policy  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.problems.levelset import LevelSetProblem  # noqa: E402
from boloop.simulate import simulate  # noqa: E402
from boloop.spaces import Box, CandidateSet  # noqa: E402
from levelset_peers import GRID_PROBLEMS as GRIDS  # noqa: E402
from levelset_peers import USER_PROBLEMS, _problem, _user  # noqa: E402
from levelset_stall_problems import INTERLEAVE_PROBLEMS, STALL_PROBLEMS  # noqa: E402

BOXES = [
    "levelset/sphere5?n_eval=5000",
    "levelset/rosenbrock5?n_eval=5000",
    "levelset/styblinski-tang5?n_eval=5000",
]


def random_map(k: int) -> LevelSetProblem:
    """``random/k``: a trend plus 1-3 bumps on a 31 x 31 grid (see the module docstring)."""
    rng = np.random.default_rng([7919, k])
    angle = rng.uniform(0, 2 * np.pi)
    slope = rng.uniform(0.0, 1.5) * np.array([np.cos(angle), np.sin(angle)])
    m = int(rng.integers(1, 4))
    centres = rng.uniform(0.05, 0.95, size=(m, 2))
    heights = rng.uniform(0.5, 1.2, size=m)
    sds = rng.uniform(0.03, 0.2, size=m)

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        return X @ slope + (heights * np.exp(-d2 / (2 * sds**2))).sum(1)

    space = CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 31)
    quantile = rng.uniform(0.6, 0.9)
    return _user(f"random/{k}", space, f, quantile, "a random trend plus bumps")


def random_box(k: int) -> LevelSetProblem:
    """``random-box/k``: the map of ``random/k`` on the box ``[0, 1]^2`` itself (continuous), F
    on 5000 random points of it, the threshold and noise of ``random/k``."""
    grid = random_map(k)
    box = Box(np.zeros(2), np.ones(2))
    return LevelSetProblem(
        id=f"random-box/{k}",
        family="levelset",
        space=box,
        description="a random trend plus bumps on a box",
        settings={"threshold": grid.threshold},
        function=grid.function,
        threshold=grid.threshold,
        noise_sd=grid.noise_sd,
        n_eval=5000,
    )


def _get(pid: str) -> Any:
    if pid.startswith("random/"):
        return random_map(int(pid.split("/")[1]))
    if pid.startswith("random-box/"):
        return random_box(int(pid.split("/")[1]))
    if pid in INTERLEAVE_PROBLEMS:
        return INTERLEAVE_PROBLEMS[pid]()
    if pid in USER_PROBLEMS or pid in STALL_PROBLEMS:
        return _problem(pid)
    return get(pid)


def record(
    pid: str, seed: int, steps: int, remedy: int = 0, method: str = "randomized-straddle"
) -> dict[str, Any]:
    """One run of the learned default with the per-answer quantities of the module docstring.

    ``remedy > 0``: each time the policy reports a stall (``policy.stall()``), up to ``remedy``
    times in the run, a measurement at the stall's ``farthest`` candidate is added
    (``add_observations``, the truth plus the problem's noise from a stream of its own), what the
    status suggests to a person."""
    problem = _get(pid)
    policy = make_policy(method, problem, seed, kernel=None)
    th = policy.threshold
    state: dict[str, Any] = {
        "cls": None,
        "decided": None,
        "seen": set(),
        "added": 0,
        "asked": {},
        "kx": 0,
        "kx_upper": None,
    }
    rows: list[dict[str, Any]] = []
    extra = np.random.default_rng([seed, 104729])
    ask = policy.ask

    def asked() -> Any:
        """The query, and what the model it was chosen with knew there: ``sigma_{t-1}(x_t)``
        over the noise's sd and the distance to the nearest measured setting in length-scales
        (read before the answer; nothing in the policy changes)."""
        state["obs_before"] = np.array(getattr(policy, "observed", []), dtype=bool)
        q = ask()
        x = np.asarray(q.x, dtype=np.float64).reshape(1, -1)
        sd = float(policy.predict(x)[1][0])
        noise = float(np.sqrt(max(policy.gp.noise_variance, 0.0)))
        # the notice of main before the decided map (exact_known_count): the same count with
        # "no candidate changed side at all" between consecutive queries
        index = getattr(q, "index", None)
        if index is not None:
            sd_q, measured = float(policy.cache.std[index]), bool(state["obs_before"][index])
        else:
            sd_q, measured = sd, False
        upper = np.asarray(policy.cache.mean) >= th
        same = state["kx_upper"] is not None and np.array_equal(upper, state["kx_upper"])
        state["kx_upper"] = upper
        if not (measured or sd_q < noise):
            state["kx"] = 0
        else:
            state["kx"] = state["kx"] + 1 if same else 1
        ls = np.atleast_1d(np.asarray(getattr(policy.gp.kernel, "lengthscale", 1.0), float))
        X = np.asarray(policy.gp.X, dtype=np.float64)
        near = float(np.sqrt((((X - x) / ls) ** 2).sum(1).min())) if X.shape[0] else np.inf
        state["asked"] = {"sdn": sd / noise if noise > 0 else np.inf, "dls": near}
        return q

    policy.ask = asked  # type: ignore[method-assign]

    def on_record(rec: dict[str, Any]) -> None:
        stall = policy.stall() if hasattr(policy, "stall") else None
        added = False
        if remedy and stall is not None and state["added"] < remedy:
            x = np.asarray(stall["farthest"], dtype=np.float64).reshape(1, -1)
            sd = getattr(problem, "noise_sd", None)
            sd = getattr(problem, "noise_std", 0.0) if sd is None else sd
            y = problem.value(x) + sd * extra.standard_normal(1)
            policy.add_observations(x, y)
            state["added"] += 1
            added = True
        mean, std = policy.candidate_posterior()
        cls = mean >= th
        decided = np.abs(mean - th) >= 2.0 * std
        flips = 0 if state["cls"] is None else int(np.sum(cls != state["cls"]))
        dflips = (
            0
            if state["cls"] is None
            else int(np.sum((cls != state["cls"]) & (decided | state["decided"])))
        )
        state["cls"], state["decided"] = cls, decided
        x = tuple(np.round(np.asarray(rec["points"][0]), 12))
        rep = x in state["seen"]
        state["seen"].add(x)
        rows.append(
            {
                "it": int(policy.iteration),
                "f": float(rec["metrics"]["fscore"]),
                "flips": flips,
                "amb": int(np.sum(np.abs(mean - th) < 2.0 * std)),
                "rep": bool(rep),
                "oc": bool(policy.overconfident_iterations[-1:] == [policy.iteration])
                if policy.iteration
                else False,
                # the count of the first notice (repeats only, main before the interleaved
                # stall) and the implemented one, at the query just answered, and a report
                "rc": int(getattr(policy, "repeats_unchanged", 0)),
                "kc": int(getattr(policy, "known_unchanged", 0)),
                "kx": int(state["kx"]),
                # candidates that changed side with this answer while decided (|mu - theta|
                # >= 2 sigma) before or after it
                "dflips": dflips,
                **state["asked"],
                "stall": stall is not None,
                "added": added,
            }
        )

    simulate(policy, problem, steps, seed, method="ours", on_record=on_record)
    return {
        "problem": pid,
        "seed": seed,
        "remedy": remedy,
        "method": method,
        "n_initial": policy.n_initial,
        "N": int(policy.N),
        "rows": rows,
    }


# -- signals --------------------------------------------------------------------------------
def _since_change(vals: list[int | bool], changed: Any) -> list[int]:
    """For each answer, answers since ``changed(prev, cur)`` was last true."""
    out, k = [], 0
    for i, v in enumerate(vals):
        k = 0 if i == 0 or changed(vals[i - 1], v, vals[: i + 1]) else k + 1
        out.append(k)
    return out


def _run_length(flags: list[bool]) -> list[int]:
    """For each answer, how many answers in a row, ending with it, have their flag."""
    out, k = [], 0
    for flag in flags:
        k = k + 1 if flag else 0
        out.append(k)
    return out


def signals(run: dict[str, Any]) -> dict[str, list[int]]:
    """Per signal, its count after every answer (fires when count >= W)."""
    rows = run["rows"]
    flips = [r["flips"] for r in rows]
    amb = [r["amb"] for r in rows]
    map_still = _since_change(flips, lambda a, b, _: b > 0)
    # the unclassified set's count reached a new minimum
    best = []
    m = np.inf
    for a in amb:
        best.append(a < m)
        m = min(m, a)
    amb_still = _run_length([not b for b in best])
    # map still AND every query at a measured point
    both = _run_length([r["flips"] == 0 and bool(r["rep"]) for r in rows])
    oc = _run_length([bool(r["oc"]) for r in rows])
    still_oc = _run_length([r["flips"] == 0 and bool(r["oc"]) for r in rows])
    # answers since the map last changed, while at least half (three quarters) of them were at
    # measured settings
    mostly = {}
    for frac in (0.5, 0.75):
        vals, c, rep = [], 0, 0
        for r in rows:
            c, rep = (c + 1, rep + int(r["rep"])) if r["flips"] == 0 else (0, 0)
            vals.append(c if c and rep >= frac * c else 0)
        mostly[f"map-unchanged, >= {frac:g} repeats"] = vals
    return {
        "implemented (known_unchanged)": [r.get("kc", 0) for r in rows],
        "exact map (kx, main before the jitter-robust test)": [r.get("kx", r.get("kc", 0)) for r in rows],
        "first notice (repeats_unchanged)": [r.get("rc", 0) for r in rows],
        **mostly,
        "map-unchanged": map_still,
        "unclassified-not-shrinking": amb_still,
        "map-unchanged+repeats": both,
        "overconfident-run": oc,
        "map-unchanged+overconfident": still_oc,
    }


def outcome(f_at: float, f_end: float) -> str:
    if f_end - f_at >= 0.02:
        return "improved"
    return "stuck" if f_at < 0.9 else "settled"


def analyze(paths: list[str], windows: list[int]) -> None:
    runs = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    print(f"{len(runs)} runs")
    # what a run's course looks like: final F, F at mid-run
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        g = r["problem"].split("?")[0]
        g = "random" if g.startswith("random/") else g
        by_group.setdefault(g, []).append(r)
    print("\nper problem: runs, F at 50 / end, runs ending below 0.9")
    for g, rs in sorted(by_group.items()):
        f50 = [x["rows"][min(49 + x["n_initial"], len(x["rows"]) - 1)]["f"] for x in rs]
        fe = [x["rows"][-1]["f"] for x in rs]
        print(
            f"  {g:34s} {len(rs):3d}  {np.mean(f50):.3f} / {np.mean(fe):.3f}  "
            f"{sum(f < 0.9 for f in fe)}"
        )
    names = list(signals(runs[0]))
    for name in names:
        print(f"\n{name}")
        print("   W  fired: improved stuck settled | not fired: improved stuck settled")
        for W in windows:
            fired = {"improved": 0, "stuck": 0, "settled": 0}
            quiet = {"improved": 0, "stuck": 0, "settled": 0}
            false_alarms = []
            for r in runs:
                counts = signals(r)[name]
                rows = r["rows"]
                start = r["n_initial"]
                at = next((i for i in range(start, len(rows)) if counts[i] >= W), None)
                f_end = rows[-1]["f"]
                if at is None:
                    quiet[outcome(rows[start]["f"] if start < len(rows) else 0.0, f_end)] += 1
                else:
                    o = outcome(rows[at]["f"], f_end)
                    fired[o] += 1
                    if o == "improved":
                        false_alarms.append(f"{r['problem']}#{r['seed']}")
            print(
                f"  {W:3d}  {fired['improved']:5d} {fired['stuck']:5d} {fired['settled']:5d}   "
                f"| {quiet['improved']:5d} {quiet['stuck']:5d} {quiet['settled']:5d}"
                f"   false alarms: {' '.join(false_alarms[:8])}"
            )


def compare(plain_path: str, remedy_path: str) -> None:
    """Paired runs without and with the remedy: F at the end of each run in which a
    measurement was added, and the answer at which the first was."""
    plain = {(r["problem"], r["seed"]): r for r in map(json.loads, open(plain_path))}
    better = worse = same = 0
    gains = []
    for line in open(remedy_path):
        r = json.loads(line)
        p = plain.get((r["problem"], r["seed"]))
        rows = r["rows"]
        first = next((i for i, x in enumerate(rows) if x.get("added")), None)
        if p is None or first is None:
            continue
        n = sum(x.get("added", False) for x in rows)
        f0, fa, fb = rows[first]["f"], p["rows"][-1]["f"], rows[-1]["f"]
        gains.append(fb - fa)
        better += fb > fa + 0.02
        worse += fb < fa - 0.02
        same += abs(fb - fa) <= 0.02
        print(
            f"  {r['problem']:28s} {r['seed']:2d}  added {n} (first after answer {first}, "
            f"F {f0:.3f})  F end without {fa:.3f}  with {fb:.3f}"
        )
    if gains:
        print(
            f"{len(gains)} runs with a measurement added: better by > 0.02 in {better}, worse "
            f"in {worse}, within 0.02 in {same}; mean change {np.mean(gains):+.3f}"
        )


def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--out", required=True)
    rec.add_argument("--steps", type=int, default=150)
    rec.add_argument("--seeds", default="0-4")
    rec.add_argument("--box-seeds", default="0-2")
    rec.add_argument("--random", type=int, default=60, help="how many random maps (seed 0)")
    rec.add_argument("--problems", nargs="*", default=None)
    rec.add_argument("--remedy", type=int, default=0, help="measurements added at stalls")
    rec.add_argument("--method", default="randomized-straddle", help="a level-set method id")
    rec.add_argument("--random-from", type=int, default=0, help="first random map")
    rec.add_argument("--random-box", type=int, default=0, help="how many random maps on a box")
    an = sub.add_parser("analyze")
    an.add_argument("paths", nargs="+")
    an.add_argument("--windows", default="10,15,20,30,40")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("plain")
    cmp_.add_argument("remedy")
    args = ap.parse_args(argv)
    if args.cmd == "compare":
        compare(args.plain, args.remedy)
        return 0
    if args.cmd == "analyze":
        analyze(args.paths, [int(w) for w in args.windows.split(",")])
        return 0
    jobs: list[tuple[str, int]] = []
    if args.problems is not None:  # these problems only ("--problems" alone: random maps only)
        jobs = [(p, s) for p in args.problems for s in _seeds(args.seeds)]
        jobs += [
            (f"random/{k}", 0) for k in range(args.random_from, args.random_from + args.random)
        ]
        jobs += [
            (f"random-box/{k}", 0)
            for k in range(args.random_from, args.random_from + args.random_box)
        ]
    else:
        grids = GRIDS + list(STALL_PROBLEMS) + list(USER_PROBLEMS)
        jobs = [(p, s) for p in grids for s in _seeds(args.seeds)]
        jobs += [(p, s) for p in BOXES for s in _seeds(args.box_seeds)]
        jobs += [
            (f"random/{k}", 0) for k in range(args.random_from, args.random_from + args.random)
        ]
    done = set()
    if os.path.exists(args.out):
        for line in open(args.out):
            r = json.loads(line)
            done.add((r["problem"], r["seed"]))
    with open(args.out, "a") as fh:
        for pid, seed in jobs:
            if (pid, seed) in done:
                continue
            r = record(pid, seed, args.steps, args.remedy, args.method)
            fh.write(json.dumps(r) + "\n")
            fh.flush()
            print(pid, seed, f"F end {r['rows'][-1]['f']:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
