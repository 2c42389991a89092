"""Level sets with unknown hyperparameters: our randomized straddle against a BoTorch peer.

For every finite (grid) level-set problem and seed, three runs on the identical grid, noise draws
(the problem's oracle generator of :func:`boloop.simulate.oracle_rng`) and F-score (the
problem's tracker, on the grid's noise-free truth):

* ``ours``: ``randomized-straddle`` with the kernel unknown (``kernel=None``: hyperparameters
  learned by :class:`boloop.gp.hyperparameters.HyperparameterLearning`, the default a user gets);
* ``fixed``: ``randomized-straddle`` with the paper's fixed kernel (the reference of issue 18's
  "no run below 0.8 of the fixed-kernel run" criterion);
* ``botorch``: BoTorch's ``SingleTaskGP`` (default priors, ``Normalize`` inputs, ``Standardize``
  outputs) refitted by ``fit_gpytorch_mll`` after every answer, querying
  ``argmax 1.96 sigma - |mu - h|`` over the grid; it starts from the same initial design as ours.

Box problems (``--boxes``) only run ``ours`` and ``fixed`` (the peer is defined on grids).

``--user`` adds grids made up for issue 18 that no paper and no test names (a user's own
studies: the kernel unknown, the threshold a quantile of the values, noise 2% of their spread);
they have no fixed kernel, so only ``ours`` and ``botorch`` run on them:

* ``user/bump``: 21 x 21 grid of ``[0, 1]^2``, a smooth bump plus a slow wave, a quarter above;
* ``user/wave``: 21 x 21 grid, ``sin 4x + cos 3y + 0.3 x y``, a quarter above;
* ``user/needles2d``: 41 x 41 grid of ``[0, 2] x [0, 1]``, three narrow peaks (sd 0.07) on a
  gentle slope, 5% above (hard: three needles to find);
* ``user/needles1d``: 301 points of ``[0, 30]``, three bumps of different widths on a slope,
  10% above;
* ``user/smooth3d``: 11^3 grid of ``[0, 1]^3``, a smooth function, 30% above.

Writes a CSV of F-scores at the checkpoints and the seconds per step (ask + tell, the tracker
excluded), and prints a table: mean F +- s.e. at each checkpoint, the median seconds per step,
the worst ratio ours / fixed at the last step.

Needs the optional ``peers`` extra (``pip install -e '.[peers]'``: torch and botorch) for the
peer; without it only ``ours`` and ``fixed`` run. Run with ``OMP_NUM_THREADS=1``::

    OMP_NUM_THREADS=1 python benchmarks/levelset_peers.py --seeds 20 --steps 100 --out out/peers.csv
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from boloop.algorithms import make_policy
from boloop.problems import get
from boloop.problems.levelset import LevelSetProblem
from boloop.queries import BasePolicy, Evaluate, Query
from boloop.recommendations import LevelSetEstimate
from boloop.simulate import simulate
from boloop.spaces import CandidateSet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from levelset_stall_problems import STALL_PROBLEMS  # noqa: E402

GRID_PROBLEMS = [
    "levelset/toy",
    "levelset/sinusoidal",
    "levelset/himmelblau",
    "levelset/gp-sample",
    "levelset/carrier-lifetime",
    "levelset/figure2",
]
BOX_PROBLEMS = [
    "levelset/sphere5?n_eval=20000",
    "levelset/rosenbrock5?n_eval=20000",
    "levelset/styblinski-tang5?n_eval=20000",
]


def _user(
    pid: str,
    space: CandidateSet,
    f: Any,
    quantile: float,
    description: str = "made up for issue 18",
) -> LevelSetProblem:
    """``pid`` over ``space`` with value ``f``, the threshold at ``quantile`` of ``f`` on the
    grid and measurement noise 2% of its spread."""
    vals = f(space.points)
    th = float(np.quantile(vals, quantile))
    return LevelSetProblem(
        id=pid,
        family="levelset",
        space=space,
        description=description,
        settings={"threshold": th},
        function=f,
        threshold=th,
        noise_sd=0.02 * float(np.std(vals)),
    )


def _user_bump() -> LevelSetProblem:
    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X).reshape(-1, 2)
        bump = np.exp(-((X[:, 0] - 0.7) ** 2 + (X[:, 1] - 0.3) ** 2) / 0.08)
        return bump + 0.5 * np.sin(3 * X[:, 0]) * X[:, 1]

    return _user("user/bump", CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 21), f, 0.75)


def _user_wave() -> LevelSetProblem:
    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X).reshape(-1, 2)
        return np.sin(4 * X[:, 0]) + np.cos(3 * X[:, 1]) + 0.3 * X[:, 0] * X[:, 1]

    return _user("user/wave", CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 21), f, 0.75)


def _user_needles2d() -> LevelSetProblem:
    centres = np.array([[0.3, 0.7], [1.2, 0.2], [1.75, 0.8]])
    heights = np.array([1.0, 0.8, 1.2])

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X).reshape(-1, 2)
        d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        return (heights * np.exp(-d2 / (2 * 0.07**2))).sum(1) + 0.1 * X[:, 0]

    space = CandidateSet.grid(np.array([[0.0, 2.0], [0.0, 1.0]]), 41)
    return _user("user/needles2d", space, f, 0.95)


def _user_needles1d() -> LevelSetProblem:
    def f(X: np.ndarray) -> np.ndarray:
        x = np.asarray(X).reshape(-1)
        return (
            3 * np.exp(-((x - 4) ** 2) / 1.0)
            + 2.5 * np.exp(-((x - 17) ** 2) / 0.6)
            + 4 * np.exp(-((x - 26) ** 2) / 1.5)
            - 0.02 * x
        )

    return _user("user/needles1d", CandidateSet.grid(np.array([[0.0, 30.0]]), 301), f, 0.90)


def _user_smooth3d() -> LevelSetProblem:
    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X).reshape(-1, 3)
        return (
            np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.5 * X[:, 2] ** 2 - 0.3 * X[:, 0] * X[:, 2]
        )

    return _user("user/smooth3d", CandidateSet.grid(np.array([[0.0, 1.0]] * 3), 11), f, 0.7)


USER_PROBLEMS = {
    "user/bump": _user_bump,
    "user/wave": _user_wave,
    "user/needles2d": _user_needles2d,
    "user/needles1d": _user_needles1d,
    "user/smooth3d": _user_smooth3d,
}


def _problem(pid: str) -> Any:
    if pid in USER_PROBLEMS:
        return USER_PROBLEMS[pid]()
    if pid in STALL_PROBLEMS:
        return STALL_PROBLEMS[pid]()
    return get(pid)


class BoTorchStraddle(BasePolicy):
    """The peer: BoTorch ``SingleTaskGP`` refitted every answer, straddle ``1.96 sigma - |mu - h|``.

    ``initial`` (k, d) are the first queries (not iterations), as for our policy.
    """

    method_id = "botorch-straddle"
    family = "levelset"

    def __init__(
        self,
        space: CandidateSet,
        threshold: float,
        initial: np.ndarray,
        seed: int,
        allow_repeats: bool = True,
    ):
        import torch

        super().__init__(seed)
        torch.manual_seed(seed)
        self.torch = torch
        self.candidates = space.points
        self.space = space
        self.threshold = float(threshold)
        self.initial = np.asarray(initial, dtype=np.float64)
        self.allow_repeats = bool(allow_repeats)
        self.observed = np.zeros(space.points.shape[0], dtype=bool)
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._initial_ids: set[int] = set()
        box = space.box
        self._bounds = torch.tensor(np.stack([box.lower, box.upper]), dtype=torch.float64)
        self._Xc = torch.tensor(self.candidates, dtype=torch.float64)
        self.cache = SimpleNamespace(mean=np.zeros(self.candidates.shape[0]))
        self._sd = np.ones(self.candidates.shape[0])
        self._model: Any = None

    def _propose(self) -> Query:
        n = len(self._y)
        if n < self.initial.shape[0]:
            x = self.initial[n]
            q = self._new_evaluate(x, index=int(self.space.index_of(x[None, :])[0]))
            self._initial_ids.add(q.id)
            return q
        acq = 1.96 * self._sd - np.abs(self.cache.mean - self.threshold)
        if not self.allow_repeats:
            acq = np.where(self.observed, -np.inf, acq)
        best = np.flatnonzero(acq == acq.max())
        i = int(best[0] if best.size == 1 else self.rng.choice(best))
        return self._new_evaluate(self.candidates[i], index=i)

    def _observe(self, query: Query, answer: Any) -> None:
        assert isinstance(query, Evaluate)
        torch = self.torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Normalize, Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        if query.index is not None:
            self.observed[query.index] = True
        self._X.append(np.asarray(query.x, dtype=np.float64))
        self._y.append(float(answer))
        X = torch.tensor(np.array(self._X), dtype=torch.float64)
        Y = torch.tensor(np.array(self._y), dtype=torch.float64).unsqueeze(-1)
        d = X.shape[1]
        model = SingleTaskGP(
            X,
            Y,
            input_transform=Normalize(d=d, bounds=self._bounds),
            outcome_transform=Standardize(m=1),
        )
        if len(self._y) >= 2:
            try:
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            except Exception:  # botorch warns and keeps the initial values; so do we
                pass
        model.eval()
        self._model = model
        with torch.no_grad():
            post = model.posterior(self._Xc)
            self.cache.mean = post.mean.squeeze(-1).numpy().astype(np.float64)
            self._sd = post.variance.clamp_min(0).sqrt().squeeze(-1).numpy().astype(np.float64)

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        return query.id not in self._initial_ids

    def recommend(self, **_: Any) -> LevelSetEstimate:
        """The sets ``{mu >= h}`` of the current posterior, as our policies return them (the
        problem's tracker classifies its evaluation points with it)."""
        upper = self.cache.mean >= self.threshold
        model, torch, cands, h = self._model, self.torch, self.candidates, self.threshold

        def classify(X: np.ndarray) -> np.ndarray:
            X = np.asarray(X, dtype=np.float64)
            if X.shape == cands.shape and np.array_equal(X, cands):
                return upper.copy()
            with torch.no_grad():
                m = model.posterior(torch.tensor(X, dtype=torch.float64)).mean.squeeze(-1)
            return m.numpy() >= h

        return LevelSetEstimate(h, self.iteration + 1, self.candidates, upper, classify)


def _design_key(pid: str, seed: int) -> str:
    """A digest of the initial design our policy would start from (the peer starts there too):
    a cached run is reused only while that design is unchanged."""
    design = make_policy("randomized-straddle", _problem(pid), seed, kernel=None).initial_design
    data = b"" if design is None else np.ascontiguousarray(design).tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


class RunCache:
    """Finished runs, one JSON object a line, keyed by (problem, method, seed, steps, design).

    Only methods whose runs cannot change with our code are cached (the peer, and the paper's
    fixed kernel, whose traces are kept bit-identical): an interrupted benchmark resumes, and no
    peer run is paid twice.
    """

    def __init__(self, path: str | None, methods: set[str]):
        self.path = Path(path) if path else None
        self.methods = methods
        self.runs: dict[tuple[str, str, int, int, str], dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.runs[self._key(r)] = r

    @staticmethod
    def _key(r: dict[str, Any]) -> tuple[str, str, int, int, str]:
        return (r["problem"], r["method"], int(r["seed"]), int(r["steps"]), r["design"])

    def get(self, kind: str, pid: str, seed: int, steps: int, design: str) -> dict[str, Any] | None:
        if kind not in self.methods:
            return None
        return self.runs.get((pid, kind, seed, steps, design))

    def put(self, r: dict[str, Any]) -> None:
        if self.path is None or r["method"] not in self.methods:
            return
        self.runs[self._key(r)] = r
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(r) + "\n")


def _run(kind: str, pid: str, seed: int, steps: int) -> dict[str, Any]:
    problem = _problem(pid)
    if kind == "ours":
        policy = make_policy("randomized-straddle", problem, seed, kernel=None)
    elif kind == "ours-unwidened":
        # the learned default before the overconfidence widening (issue 18's coating stall)
        policy = make_policy(
            "randomized-straddle", problem, seed, kernel=None, widen_when_overconfident=False
        )
    elif kind == "fixed":
        policy = make_policy("randomized-straddle", problem, seed)
    else:
        ours = make_policy("randomized-straddle", problem, seed, kernel=None)
        policy = BoTorchStraddle(
            problem.space,
            problem.settings["threshold"],
            ours.initial_design,
            seed,
            allow_repeats=problem.settings.get("allow_repeats", True),
        )
    # CPU seconds of ask + tell alone (the tracker excluded): wall-clock on a shared machine
    # measures the scheduler as much as the step
    cpu_steps = [0.0]
    for name in ("ask", "tell"):
        bound = getattr(policy, name)

        def timed(*a: Any, _f: Any = bound, **k: Any) -> Any:
            c = time.process_time()
            try:
                return _f(*a, **k)
            finally:
                cpu_steps[0] += time.process_time() - c

        setattr(policy, name, timed)
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    trace = simulate(policy, problem, steps, seed, method=kind)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = trace.step_rows()
    seconds = [r["ask_seconds"] + r["tell_seconds"] for r in rows]
    return {
        "problem": pid,
        "method": kind,
        "seed": seed,
        "fscore": [r["fscore"] for r in rows],
        "sec_per_step": float(np.median(seconds)),
        "mean_sec_per_step": float(np.mean(seconds)),
        "wall": wall,
        "cpu_per_step": cpu / max(len(rows), 1),
        "cpu_ask_tell_per_step": cpu_steps[0] / max(len(rows), 1),
        "load": load,
        "steps": steps,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", nargs="*", default=None)
    ap.add_argument("--boxes", action="store_true", help="also the 5-D box problems (no peer)")
    ap.add_argument("--user", action="store_true", help="also the made-up user grids (no fixed)")
    ap.add_argument(
        "--stall",
        action="store_true",
        help="also the grids of benchmarks/levelset_stall_problems.py (a trend plus a bump)",
    )
    ap.add_argument("--seeds", default="5", help="N (0..N-1) or A-B")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--checkpoints", default="50,100")
    ap.add_argument("--methods", default="ours,fixed,botorch")
    ap.add_argument("--out", default=None, help="CSV of per-run results")
    ap.add_argument(
        "--cache",
        default=None,
        help="JSON-lines file of finished runs: cached methods are read from it when present "
        "(same problem, seed, steps and initial design) and appended to it when run",
    )
    ap.add_argument(
        "--cache-methods",
        default="botorch,fixed",
        help="methods whose runs the cache keeps (not 'ours', which changes with the code)",
    )
    args = ap.parse_args(argv)
    if "-" in args.seeds:
        a, b = (int(v) for v in args.seeds.split("-"))
        seeds = list(range(a, b + 1))
    else:
        seeds = list(range(int(args.seeds)))
    problems = args.problems or (
        GRID_PROBLEMS
        + (BOX_PROBLEMS if args.boxes else [])
        + (list(USER_PROBLEMS) if args.user else [])
        + (list(STALL_PROBLEMS) if args.stall else [])
    )
    methods = args.methods.split(",")
    if "botorch" in methods:
        try:
            import botorch  # noqa: F401
            import torch

            torch.set_num_threads(1)
        except ImportError:
            print(
                "torch/botorch not installed (pip install -e '.[peers]'): no peer", file=sys.stderr
            )
            methods.remove("botorch")
    # one-time imports are not a step's cost (a study process pays them once): load them first
    import scipy.optimize  # noqa: F401
    import scipy.stats  # noqa: F401

    checkpoints = [int(c) for c in args.checkpoints.split(",") if int(c) <= args.steps]
    cache = RunCache(args.cache, set(args.cache_methods.split(",")))
    results: list[dict[str, Any]] = []
    writer = None
    fh = None
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        fh = open(args.out, "w", newline="")
        writer = csv.writer(fh)
        writer.writerow(
            ["problem", "method", "seed"]
            + [f"F{c}" for c in checkpoints]
            + ["sec_per_step_median", "sec_per_step_mean", "cpu_per_step", "cpu_ask_tell_per_step"]
            + ["load", "cached"]
        )
    for pid in problems:
        is_grid = isinstance(_problem(pid).space, CandidateSet)
        for seed in seeds:
            for kind in methods:
                if (kind == "botorch" and not is_grid) or (
                    kind == "fixed" and pid in USER_PROBLEMS
                ):
                    continue
                design = _design_key(pid, seed)
                r = cache.get(kind, pid, seed, args.steps, design)
                cached = r is not None
                if r is None:
                    r = _run(kind, pid, seed, args.steps)
                    r["design"] = design
                    cache.put(r)
                results.append(r)
                if writer is not None:
                    writer.writerow(
                        [pid, kind, seed]
                        + [f"{r['fscore'][c - 1]:.6f}" for c in checkpoints]
                        + [f"{r['sec_per_step']:.6g}", f"{r['mean_sec_per_step']:.6g}"]
                        + [
                            f"{r.get('cpu_per_step', math.nan):.6g}",
                            f"{r.get('cpu_ask_tell_per_step', math.nan):.6g}",
                            f"{r.get('load', math.nan):.2f}",
                        ]
                        + [int(cached)]
                    )
                    assert fh is not None
                    fh.flush()
    if fh is not None:
        fh.close()
    _report(results, problems, methods, checkpoints, args.steps)
    return 0


def _report(
    results: list[dict[str, Any]], problems: list[str], methods: list[str], cps: list[int], T: int
) -> None:
    head = "| problem | method | seeds | " + " | ".join(f"F@{c}" for c in cps)
    print(head + " | min F@T | s/step (median) | s/step (mean) |")
    print("|" + "---|" * (len(cps) + 6))
    for pid in problems:
        per: dict[str, dict[int, dict[str, Any]]] = {}
        for r in results:
            if r["problem"] == pid:
                per.setdefault(r["method"], {})[r["seed"]] = r
        for kind in methods:
            runs = list(per.get(kind, {}).values())
            if not runs:
                continue
            cells = []
            for c in cps:
                v = np.array([r["fscore"][c - 1] for r in runs])
                se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
                cells.append(f"{v.mean():.3f} +- {se:.3f}")
            fin = min(r["fscore"][T - 1] for r in runs)
            sec = float(np.median([r["sec_per_step"] for r in runs]))
            msec = float(np.median([r["mean_sec_per_step"] for r in runs]))
            print(
                f"| {pid} | {kind} | {len(runs)} | "
                + " | ".join(cells)
                + f" | {fin:.3f} | {sec:.4g} | {msec:.4g} |"
            )
        for mine in ("ours", "ours-unwidened"):
            if mine in per and "fixed" in per:
                ratios = [
                    per[mine][s]["fscore"][T - 1] / max(per["fixed"][s]["fscore"][T - 1], 1e-12)
                    for s in per[mine]
                    if s in per["fixed"]
                ]
                below = sum(r < 0.8 for r in ratios)
                print(
                    f"|   {pid}: worst F({mine})/F(fixed) at T={T}: {min(ratios):.3f}, "
                    f"runs below 0.8: {below} of {len(ratios)} |"
                )
        if "ours" in per and "botorch" in per:
            for key, what in (
                ("sec_per_step", "median"),
                ("mean_sec_per_step", "mean"),
                ("cpu_per_step", "CPU incl. tracker"),
                ("cpu_ask_tell_per_step", "CPU of ask + tell, mean"),
            ):
                so = np.median([r.get(key, math.nan) for r in per["ours"].values()])
                sb = np.median([r.get(key, math.nan) for r in per["botorch"].values()])
                print(f"|   {pid}: botorch / ours seconds per step ({what}): {sb / so:.0f}x |")


if __name__ == "__main__":
    raise SystemExit(main())
