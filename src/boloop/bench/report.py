"""``boloop bench plot`` and ``boloop bench summary``: read ``results.csv``, aggregate over seeds.

* :func:`plot_results` writes one PNG per (problem, metric): the mean over seeds and a band of one
  standard error (``std(ddof=1) / sqrt(n)``) per method against step, on a log y axis for a
  metric whose means are positive and span more than two decades (:func:`choose_y_scale`).
  matplotlib comes from the ``plot`` extra and is imported only here.
* :func:`summary_table` gives a markdown table per problem: for every method the number of seeds,
  each metric at the final step as ``mean ± standard error``, and the median over all steps of all
  runs of ``ask_seconds + tell_seconds`` (seconds per step).

NaN metric values (e.g. a simple regret before any recommendation exists) are left out of the mean
and of ``n`` at that step.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import numpy as np

from boloop.bench.results_file import RESULTS_FILE, Key, check_output_folder, read_results
from boloop.errors import InvalidInputError, MissingExtraError

logger = logging.getLogger("boloop")

__all__ = [
    "aggregate",
    "choose_y_scale",
    "file_version_warnings",
    "final_values",
    "plot_results",
    "summary_table",
]


def _float(text: str) -> float:
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def _load(results: str | Path) -> tuple[list[str], dict[Key, list[dict[str, str]]]]:
    path = Path(results)
    if path.is_dir():
        path = path / RESULTS_FILE
    if not path.exists():
        raise InvalidInputError(f"no results file at {path}; run `boloop bench run` first")
    metrics, runs = read_results(path)
    if not runs:
        raise InvalidInputError(f"{path} has no rows")
    for key, rows in runs.items():  # a value edited by hand was read as missing, silently
        for row in rows:
            for metric in metrics:
                text = row.get(metric, "")
                if text.strip() and math.isnan(_float(text)) and text.strip().lower() != "nan":
                    raise InvalidInputError(
                        f"{path}: {metric} = {text!r} is not a number (run {key[1]} on "
                        f"{key[0]} seed {key[2]}, step {row['step']}); boloop writes a number "
                        "or leaves the cell empty"
                    )
    return metrics, runs


def _problem_metrics(
    metrics: list[str], runs: dict[Key, list[dict[str, str]]], problem: str
) -> list[str]:
    """The metric columns that have a value for ``problem`` (in file order)."""
    rows = [r for k, rs in runs.items() if k[0] == problem for r in rs]
    return [m for m in metrics if any(r.get(m, "") != "" for r in rows)]


def _matrix(rows_by_seed: list[list[dict[str, str]]], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Steps (T,) and values (n_seeds, T) with NaN where a run has no such step."""
    steps = sorted({int(r["step"]) for rows in rows_by_seed for r in rows})
    col = {s: j for j, s in enumerate(steps)}
    V = np.full((len(rows_by_seed), len(steps)), np.nan)
    for i, rows in enumerate(rows_by_seed):
        for r in rows:
            V[i, col[int(r["step"])]] = _float(r.get(metric, ""))
    return np.asarray(steps), V


def _mean_se(V: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = np.sum(np.isfinite(V), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.nansum(V, axis=axis)
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        dev = np.where(np.isfinite(V), V - np.expand_dims(mean, axis), 0.0)
        var = np.sum(dev**2, axis=axis) / np.maximum(n - 1, 1)
        se = np.where(n > 1, np.sqrt(var / np.maximum(n, 1)), np.nan)
    return mean, se, n


def aggregate(
    results: str | Path,
) -> dict[str, dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]]:
    """``{problem: {metric: {method: (steps (T,), mean (T,), se (T,), n (T,))}}}``."""
    metrics, runs = _load(results)
    out: dict[str, dict[str, dict[str, tuple[np.ndarray, ...]]]] = {}
    for problem in sorted({k[0] for k in runs}):
        out[problem] = {}
        methods = sorted({k[1] for k in runs if k[0] == problem})
        for metric in _problem_metrics(metrics, runs, problem):
            out[problem][metric] = {}
            for method in methods:
                seeds = sorted(k for k in runs if k[0] == problem and k[1] == method)
                steps, V = _matrix([runs[k] for k in seeds], metric)
                mean, se, n = _mean_se(V)
                out[problem][metric][method] = (steps, mean, se, n)
    return out  # type: ignore[return-value]


def final_values(runs: dict[Key, list[dict[str, str]]], key: Key, metric: str) -> float:
    """The metric at the last step of run ``key``."""
    last = max(runs[key], key=lambda r: int(r["step"]))
    return _float(last.get(metric, ""))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


#: the y scales of :func:`plot_results`
Y_SCALES = ("auto", "log", "linear")

#: ``y_scale="auto"`` draws a metric on a log axis when its means span more than this many decades
AUTO_LOG_DECADES = 2.0


def choose_y_scale(values: np.ndarray, y_scale: str = "auto") -> str:
    """The matplotlib y scale for a metric whose plotted means are ``values`` (NaN ignored).

    ``"auto"``: ``"log"`` when every mean is positive and they span more than
    :data:`AUTO_LOG_DECADES` decades (a loss falling from 40 to 0.02: on a linear axis the
    methods cannot be told apart after the first steps), else ``"linear"``. ``"log"``: ``"log"``
    when every mean is positive, else ``"symlog"`` (a log axis with a linear part around zero, so
    that zeros and negative values are drawn, not dropped). ``"linear"``: ``"linear"``.
    """
    if y_scale not in Y_SCALES:
        raise InvalidInputError(f"y_scale must be one of {Y_SCALES}, got {y_scale!r}")
    if y_scale == "linear":
        return "linear"
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "linear"
    positive = bool(np.all(v > 0))
    if y_scale == "log":
        return "log" if positive else "symlog"
    if positive and math.log10(float(v.max()) / float(v.min())) > AUTO_LOG_DECADES:
        return "log"
    return "linear"


def _log_limits(
    by_method: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[float, float]:
    """Y limits of a log axis: every mean and band, except a band's lower edge more than a
    decade below the smallest mean (a mean near its standard error, e.g. one seed of three at
    0, would stretch the axis over many empty decades; that band runs off the bottom)."""
    means = np.concatenate([m for _, m, _, _ in by_method.values()])
    lows = np.concatenate([m - np.nan_to_num(se) for _, m, se, _ in by_method.values()])
    highs = np.concatenate([m + np.nan_to_num(se) for _, m, se, _ in by_method.values()])
    smallest = float(np.nanmin(means))
    lows = lows[np.isfinite(lows) & (lows >= smallest / 10)]
    bottom = min(smallest, float(lows.min()) if lows.size else smallest)
    return bottom / 1.3, float(np.nanmax(highs)) * 1.3


def plot_results(
    results: str | Path, out_dir: str | Path | None = None, y_scale: str = "auto"
) -> list[Path]:
    """One PNG per (problem, metric) in ``out_dir`` (default: the results directory); returns the
    paths written. ``y_scale`` (``"auto"``, ``"log"`` or ``"linear"``) chooses each metric's y
    axis with :func:`choose_y_scale`; the axis label names a log scale. A problem whose rows come
    from several versions of its file is logged as a warning (:func:`file_version_warnings`)."""
    if y_scale not in Y_SCALES:
        raise InvalidInputError(f"y_scale must be one of {Y_SCALES}, got {y_scale!r}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingExtraError(
            "bench plot needs matplotlib, which boloop does not install by default: "
            "pip install 'boloop[plot]'"
        ) from exc
    for warning in file_version_warnings(results).values():  # boloop bench plot prints them
        logger.warning("%s", warning)
    res = Path(results)
    out = Path(out_dir) if out_dir is not None else (res if res.is_dir() else res.parent)
    check_output_folder(out).mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for problem, by_metric in aggregate(results).items():
        for metric, by_method in by_metric.items():
            fig, ax = plt.subplots(figsize=(6, 4))
            for method, (steps, mean, se, n) in by_method.items():
                ok = np.isfinite(mean)
                (line,) = ax.plot(steps[ok], mean[ok], label=f"{method} (n={int(n.max())})")
                band = ok & np.isfinite(se)
                ax.fill_between(
                    steps[band],
                    (mean - se)[band],
                    (mean + se)[band],
                    color=line.get_color(),
                    alpha=0.2,
                    linewidth=0,
                )
            means = np.concatenate([m for _, m, _, _ in by_method.values()])
            scale = choose_y_scale(means, y_scale)
            label = metric
            if scale == "log":
                ax.set_yscale("log", nonpositive="clip")
                ax.set_ylim(*_log_limits(by_method))
                label = f"{metric} (log scale)"
            elif scale == "symlog":
                finite = np.abs(means[np.isfinite(means)])
                small = finite[finite > 0]
                ax.set_yscale("symlog", linthresh=float(small.min()) if small.size else 1.0)
                label = f"{metric} (symmetric log scale)"
            ax.set_xlabel("step")
            ax.set_ylabel(label)
            ax.set_title(f"{problem}: {metric} (mean ± s.e.)", fontsize=10)
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            path = out / f"{_slug(problem)}__{_slug(metric)}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


def _fmt(mean: float, se: float) -> str:
    if not math.isfinite(mean):
        return "nan"
    digits = 4 if abs(mean) < 1e4 else 1
    if not math.isfinite(se):
        return f"{mean:.{digits}g}"
    return f"{mean:.{digits}g} ± {se:.2g}"


#: the line under each table of :func:`summary_table`: what the numbers are
_SUMMARY_NOTE = (
    "final: the metric at each run's last step, mean ± standard error over the seeds "
    "(sample std / √n); median s/step: ask + tell seconds over all steps of all runs"
)


def _seed_ranges(seeds: list[int]) -> list[str]:
    """``[0, 1, 2, 5]`` as the ``--seeds`` values that give them: ``["0-2", "5-5"]``."""
    out: list[str] = []
    start = prev = seeds[0]
    for s in [*seeds[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        out.append(f"{start}-{prev}")
        if s is not None:
            start = prev = s
    return out


def _file_version_now(reference: str) -> str | None:
    """The fingerprint of the file of ``path/to/file.py:factory`` as it is now on disk (the path
    read from the working directory, as ``bench run`` read it), or None when there is no such
    file here."""
    from boloop._user_code import fingerprint

    path = Path(reference.partition("?")[0].rpartition(":")[0]).expanduser()
    if not path.is_file():
        return None
    code = fingerprint(path)
    if code.stale:  # this process imported another version than the disk's: not the file now
        return None
    return code.value or None


def file_version_warnings(results: str | Path) -> dict[str, str]:
    """By problem: a warning when the rows of a problem given as ``path/to/file.py:factory`` come
    from more than one version of that file (column ``problem_file_sha256``; the file, or a module
    of the user's it imports, changed between two ``bench run`` commands that ran different
    methods): the table and the plots would compare methods run on different problems. It names
    the methods (and seeds) run on another version than the file now, when the file is found
    from the working directory, and the command that reruns them (a changed file's runs run
    again without ``--force``)."""
    import shlex

    from boloop.bench.results_file import METHOD_SHA256, PROBLEM_SHA256

    _, runs = _load(results)
    res = Path(results)
    out_dir = res if res.is_dir() else res.parent
    warnings: dict[str, str] = {}
    for problem in sorted({k[0] for k in runs}):
        version: dict[Key, str] = {}
        for k, rows in runs.items():
            if k[0] == problem:
                values = {r.get(PROBLEM_SHA256) or "" for r in rows}
                version[k] = values.pop() if len(values) == 1 else "?"
        versions = set(version.values())
        if len(versions) < 2:
            continue
        shown = problem.partition("?")[0].rpartition(":")[0] or problem
        now = _file_version_now(problem)
        text = (
            f"warning: the rows of {problem} come from {len(versions)} versions of {shown} "
            "(its problem_file_sha256 differs between runs): its methods ran on "
            "different problems. "
        )
        if now is None or now not in versions:
            where = "found here" if now is None else "as it is now"
            by_version = [
                f"{v[:12] or '(none recorded)'}: "
                + ", ".join(sorted({k[1] for k, vk in version.items() if vk == v}))
                for v in sorted(versions)
            ]
            warnings[problem] = text + (
                f"None of them is known to be {shown} {where}; by version: "
                f"{'; '.join(by_version)}. Rerun every method of it (`boloop bench run` with "
                f"--force) into --out {shlex.quote(str(out_dir))}"
            )
            continue
        old = sorted(k for k, v in version.items() if v != now)
        file_methods = any(r.get(METHOD_SHA256) for k in old for r in runs[k])
        groups: dict[tuple[str, int], list[int]] = {}
        for k in old:
            budget = max(int(r["step"]) for r in runs[k])
            groups.setdefault((k[1], budget), []).append(k[2])
        on_old = ", ".join(
            f"{m} (seed{'s' if len(seeds) > 1 else ''} {', '.join(_seed_ranges(seeds))})"
            for (m, _), seeds in sorted(groups.items())
        )
        commands = []
        for (method, budget), seeds in sorted(groups.items()):
            for seed_range in _seed_ranges(sorted(seeds)):
                commands.append(
                    f"`boloop bench run --problem {shlex.quote(problem)} --method "
                    f"{shlex.quote(method)} --seeds {seed_range} --budget {budget} --out "
                    f"{shlex.quote(str(out_dir))}`"
                )
        warnings[problem] = text + (
            f"Run on an older version than {shown} now: {on_old}. Rerun them (the runs of a "
            f"changed file run again): {' and '.join(commands)}"
            + (" (a method of yours: give its path/to/file.py:factory)" if file_methods else "")
        )
    return warnings


def summary_table(results: str | Path) -> str:
    """Markdown: one table per problem with final metrics (mean ± s.e. over seeds) per method and
    the median seconds per step (ask + tell), each table followed by a line saying so; a problem
    whose rows come from several versions of its file has the warning of
    :func:`file_version_warnings` under its heading."""
    metrics, runs = _load(results)
    warnings = file_version_warnings(results)
    parts: list[str] = []
    for problem in sorted({k[0] for k in runs}):
        cols = _problem_metrics(metrics, runs, problem)
        header = ["method", "seeds", "steps", *[f"final {m}" for m in cols], "median s/step"]
        lines = [f"### {problem}", ""]
        if problem in warnings:
            lines += [f"**{warnings[problem]}**", ""]
        lines += [
            "| " + " | ".join(header) + " |",
            "|" + "|".join("---" for _ in header) + "|",
        ]
        for method in sorted({k[1] for k in runs if k[0] == problem}):
            keys = sorted(k for k in runs if k[0] == problem and k[1] == method)
            cells = [method, str(len(keys))]
            n_steps = sorted({max(int(r["step"]) for r in runs[k]) for k in keys})
            cells.append("/".join(str(s) for s in n_steps))
            for m in cols:
                v = np.array([final_values(runs, k, m) for k in keys])
                mean, se, _ = _mean_se(v[:, None])
                cells.append(_fmt(float(mean[0]), float(se[0])))
            secs = [
                _float(r["ask_seconds"]) + _float(r["tell_seconds"]) for k in keys for r in runs[k]
            ]
            cells.append(f"{float(np.nanmedian(secs)):.2g}")
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", _SUMMARY_NOTE]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
