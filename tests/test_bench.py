"""boloop bench: seeds parsing, the results.csv schema, resume after an interrupted sweep,
determinism across job counts, user problem files, plots, summary and the demo table."""

from __future__ import annotations

import csv
import io
import textwrap
from pathlib import Path

import pytest

from boloop.algorithms import register_method
from boloop.algorithms.registry import Option
from boloop.algorithms.toy import RandomEvaluate
from boloop.bench import parse_seeds, plot_results, read_results, run_sweep, summary_table
from boloop.bench.demo import DEMO, DemoEntry, run_demo, runnable_entries
from boloop.errors import InvalidInputError, UnknownIdError
from boloop.problems import get
from progress_checks import Frame, check_whole_counts_and_no_early_estimate, frames

TOY_LS = "levelset/toy"
TOY_PREF = "preference/toy"


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _strip_seconds(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in rows]


# -- seeds -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, seeds",
    [("3", [0, 1, 2]), ("1", [0]), ("2-4", [2, 3, 4]), ("5-5", [5]), ("07", list(range(7)))],
)
def test_parse_seeds(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["5-3", "0", "", "a", "-2", "1-", "3-x", "1,1", "2.5"])
def test_parse_seeds_rejects(text: str) -> None:
    with pytest.raises(InvalidInputError, match="seed"):
        parse_seeds(text)


# -- schema ----------------------------------------------------------------------------------------
def test_results_csv_schema(tmp_path: Path) -> None:
    report = run_sweep([TOY_LS, TOY_PREF], ["toy-random"], "2", 5, tmp_path, jobs=1)
    assert len(report.completed) == 4 and not report.failed
    with (tmp_path / "results.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    ls = get(TOY_LS).metric_names()
    pref = get(TOY_PREF).metric_names()
    assert header == [
        "problem",
        "method",
        "seed",
        "step",
        *ls,
        *[m for m in pref if m not in ls],
        "ask_seconds",
        "tell_seconds",
    ]
    rows = _rows(tmp_path)
    assert len(rows) == 2 * 2 * 5
    keys = {(r["problem"], r["method"], r["seed"], r["step"]) for r in rows}
    assert len(keys) == len(rows)  # one row per (problem, method, seed, step)
    for r in rows:
        assert float(r["ask_seconds"]) >= 0 and float(r["tell_seconds"]) >= 0
        if r["problem"] == TOY_LS:
            assert r["regret"] == "" and r["loss"] != ""
        else:
            assert r["loss"] == "" and r["regret"] != ""


# -- resume ----------------------------------------------------------------------------------------
class _Interrupt(Exception):
    pass


def test_resume_after_interrupted_sweep(tmp_path: Path) -> None:
    full = tmp_path / "full"
    run_sweep([TOY_LS], ["toy-random"], "4", 6, full, jobs=1)

    part = tmp_path / "part"
    done: list[tuple] = []

    def interrupt_after_two(key: tuple) -> None:
        done.append(key)
        if len(done) == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_sweep([TOY_LS], ["toy-random"], "4", 6, part, jobs=1, on_complete=interrupt_after_two)
    _, runs = read_results(part)
    assert set(runs) == set(done)  # the two completed runs were written before the interruption

    report = run_sweep([TOY_LS], ["toy-random"], "4", 6, part, jobs=1)
    assert sorted(report.skipped) == sorted(done) and len(report.completed) == 2
    assert _strip_seconds(_rows(part)) == _strip_seconds(_rows(full))

    again = run_sweep([TOY_LS], ["toy-random"], "4", 6, part, jobs=1)
    assert len(again.skipped) == 4 and not again.completed
    forced = run_sweep([TOY_LS], ["toy-random"], "4", 6, part, jobs=1, force=True)
    assert len(forced.completed) == 4
    assert _strip_seconds(_rows(part)) == _strip_seconds(_rows(full))


def test_rerun_with_other_budget_replaces_the_run(tmp_path: Path) -> None:
    run_sweep([TOY_LS], ["toy-random"], "1", 3, tmp_path, jobs=1)
    report = run_sweep([TOY_LS], ["toy-random"], "1", 5, tmp_path, jobs=1)
    assert len(report.completed) == 1
    assert [r["step"] for r in _rows(tmp_path)] == ["1", "2", "3", "4", "5"]


def test_a_partial_results_file_without_temp_leftovers(tmp_path: Path) -> None:
    run_sweep([TOY_LS], ["toy-random"], "2", 3, tmp_path, jobs=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]


# -- determinism -----------------------------------------------------------------------------------
def test_same_rows_serial_and_parallel(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    run_sweep([TOY_LS, "expert/toy"], ["toy-random"], "0-2", 5, a, jobs=1)
    run_sweep([TOY_LS, "expert/toy"], ["toy-random"], "0-2", 5, b, jobs=2)
    assert _strip_seconds(_rows(a)) == _strip_seconds(_rows(b))


# -- bad input -------------------------------------------------------------------------------------
def test_unknown_ids_and_bad_budget(tmp_path: Path) -> None:
    with pytest.raises(UnknownIdError, match="levelset/toy"):
        run_sweep(["levelset/nope"], ["toy-random"], "1", 3, tmp_path)
    with pytest.raises(UnknownIdError, match="toy-random"):
        run_sweep([TOY_LS], ["nope"], "1", 3, tmp_path)
    for budget in (0, -2):
        with pytest.raises(InvalidInputError, match="budget"):
            run_sweep([TOY_LS], ["toy-random"], "1", budget, tmp_path)
    with pytest.raises(InvalidInputError, match="5-3"):
        run_sweep([TOY_LS], ["toy-random"], "5-3", 3, tmp_path)
    with pytest.raises(InvalidInputError, match="jobs"):
        run_sweep([TOY_LS], ["toy-random"], "2", 3, tmp_path, jobs=0)
    assert not (tmp_path / "results.csv").exists() or _rows(tmp_path) == []


def test_default_budget_from_problem_settings(tmp_path: Path) -> None:
    run_sweep(["expert/toy"], ["toy-random"], "1", None, tmp_path, jobs=1)
    assert len(_rows(tmp_path)) == get("expert/toy").settings["budget"]


@register_method("zz-crash", "levelset", "test only: raises in its third ask")
def _crashing(problem, seed, **options):  # type: ignore[no-untyped-def]
    class Crash(RandomEvaluate):
        def ask(self):  # type: ignore[no-untyped-def]
            if len(self.history) == 2:
                raise RuntimeError("boom")
            return super().ask()

    return Crash(problem.space, seed, threshold=0.25, sets=True)


def test_failed_run_is_reported_and_others_kept(tmp_path: Path) -> None:
    report = run_sweep([TOY_LS], ["zz-crash", "toy-random"], "1", 4, tmp_path, jobs=1)
    assert [k[1] for k, _ in report.failed] == ["zz-crash"]
    assert "boom" in report.failed[0][1]
    assert {r["method"] for r in _rows(tmp_path)} == {"toy-random"}


_SEEN_OPTIONS: list[dict] = []


@register_method(
    "zz-options",
    "levelset",
    "test only: records its options",
    options=(Option("threshold", "float", None, "test only"),),
)
def _with_options(problem, seed, **options):  # type: ignore[no-untyped-def]
    _SEEN_OPTIONS.append(options)
    return RandomEvaluate(problem.space, seed, sets=True, **options)


def test_method_options_in_the_id(tmp_path: Path) -> None:
    _SEEN_OPTIONS.clear()
    report = run_sweep([TOY_LS], ["zz-options?threshold=0.9"], "1", 2, tmp_path, jobs=1)
    # built twice: once by the plan (checking option values) and once by the run
    assert not report.failed and _SEEN_OPTIONS == [{"threshold": 0.9}] * 2
    assert {r["method"] for r in _rows(tmp_path)} == {"zz-options?threshold=0.9"}


def test_a_bad_option_value_stops_the_sweep_before_any_run(tmp_path: Path) -> None:
    """An option value the method refuses (here a recommendation rule it does not have) is an
    error before the sweep starts, not a failure of each of its runs."""
    with pytest.raises(InvalidInputError, match="'eubo.recommend_rule=borda' on problem"):
        run_sweep(["preference/toy"], ["eubo?recommend_rule=borda"], "0-1", 3, tmp_path, jobs=1)
    assert not (tmp_path / "results.csv").exists()


def test_a_pair_that_cannot_run_at_all_still_fails_per_run(tmp_path: Path) -> None:
    """The up-front check judges option values only: a method that cannot run on one problem
    of a mixed sweep (MILE needs a finite set; sphere5 is a box) fails those runs, reported
    with the others, and the rest of the sweep runs."""
    report = run_sweep(
        ["levelset/toy", "levelset/sphere5"], ["mile?sqrt_beta=2"], "0-0", 2, tmp_path, jobs=1
    )
    assert [r[0] for r in report.completed] == ["levelset/toy"]
    assert [f[0][0] for f in report.failed] == ["levelset/sphere5"]


# -- user problem files ----------------------------------------------------------------------------
def test_problem_from_a_python_file(tmp_path: Path) -> None:
    src = tmp_path / "my_problem.py"
    src.write_text(
        textwrap.dedent(
            """
            from boloop.problems.toy import ToyLevelSet

            def make(threshold=0.0):
                problem = ToyLevelSet(threshold=threshold)
                problem.description = "mine"
                return problem
            """
        )
    )
    pid = f"{src}:make?threshold=0.5"
    problem = get(pid)
    assert problem.id == pid and problem.settings["threshold"] == 0.5
    out = tmp_path / "out"
    run_sweep([pid], ["toy-random"], "2", 3, out, jobs=2)
    rows = _rows(out)
    assert {r["problem"] for r in rows} == {pid} and len(rows) == 6
    with pytest.raises(InvalidInputError, match="no function 'nope'"):
        get(f"{src}:nope")
    with pytest.raises(InvalidInputError, match="does not exist"):
        get(f"{tmp_path / 'missing.py'}:make")


# -- plot and summary ------------------------------------------------------------------------------
def test_plot_and_summary(tmp_path: Path) -> None:
    run_sweep([TOY_LS, TOY_PREF], ["toy-random"], "3", 5, tmp_path, jobs=1)
    paths = plot_results(tmp_path)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        [f"levelset_toy__{m}.png" for m in ("loss", "fscore")]
        + [f"preference_toy__{m}.png" for m in ("regret", "cumulative_regret", "simple_regret")]
    )
    assert all(p.stat().st_size > 1000 and p.read_bytes()[:4] == b"\x89PNG" for p in paths)
    table = summary_table(tmp_path)
    assert "### levelset/toy" in table and "### preference/toy" in table
    assert "| method | seeds | steps | final loss | final fscore | median s/step |" in table
    line = next(x for x in table.splitlines() if x.startswith("| toy-random | 3 | 5 | "))
    # the final loss cell is the mean ± s.e. of the three runs' step-5 values
    _, runs = read_results(tmp_path)
    finals = [
        float(next(r["loss"] for r in runs[(TOY_LS, "toy-random", s)] if r["step"] == "5"))
        for s in range(3)
    ]
    mean = sum(finals) / 3
    assert line.split("|")[4].strip().startswith(f"{mean:.4g}")
    with pytest.raises(InvalidInputError, match="no results"):
        summary_table(tmp_path / "nothing")


# -- demo ------------------------------------------------------------------------------------------
def test_demo_table_has_a_row_per_family_and_toy_fallbacks() -> None:
    real = {e.family for e in DEMO if not e.toy}
    toys = {e.family for e in DEMO if e.toy}
    assert real == toys == {"levelset", "preference", "safe", "expert"}
    for entry in runnable_entries():
        assert entry.seeds == "3"
    families = [e.family for e in runnable_entries()]
    assert sorted(families) == sorted(set(families))  # one row per family runs


def test_demo_skips_missing_ids_and_runs_toys(tmp_path: Path) -> None:
    entries = [
        DemoEntry("levelset", "levelset/not-yet", ("toy-random",), 5),
        DemoEntry("levelset", TOY_LS, ("toy-random",), 5, seeds="2", toy=True),
        DemoEntry("expert", "expert/toy", ("not-yet", "toy-random"), 5, seeds="2"),
        DemoEntry("expert", "expert/toy", ("toy-random",), 4, seeds="2", toy=True),
    ]
    chosen = runnable_entries(entries)
    assert chosen == [entries[1], entries[3]]
    text = run_demo(tmp_path, entries=entries, jobs=1)
    assert "### levelset/toy" in text and "### expert/toy" in text
    assert len(list(tmp_path.glob("*.png"))) == 2 + 5


def test_row_cut_short_by_a_kill_is_rerun(tmp_path: Path) -> None:
    full, cut = tmp_path / "full", tmp_path / "cut"
    run_sweep([TOY_LS], ["toy-random"], "3", 5, full, jobs=1)
    run_sweep([TOY_LS], ["toy-random"], "3", 5, cut, jobs=1)
    text = (cut / "results.csv").read_text()
    (cut / "results.csv").write_text(text[: len(text) - 25])  # the last row is cut in the middle
    _, runs = read_results(cut)
    assert sum(len(r) for r in runs.values()) == 3 * 5 - 1
    report = run_sweep([TOY_LS], ["toy-random"], "3", 5, cut, jobs=1)
    assert report.completed == [(TOY_LS, "toy-random", 2)] and len(report.skipped) == 2
    assert _strip_seconds(_rows(cut)) == _strip_seconds(_rows(full))


_SLOW_PROBLEM = """
import time
from boloop.problems.toy import ToyPreference

class Slow(ToyPreference):
    def compare(self, query, rng):
        time.sleep(0.03)
        return super().compare(query, rng)

def make():
    return Slow()
"""


def test_resume_after_the_process_is_killed(tmp_path: Path) -> None:
    """A real `boloop bench run` killed with SIGKILL after its first completed run; the rerun
    completes the sweep and the rows equal those of an uninterrupted sweep."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "slow.py"
    src.write_text(_SLOW_PROBLEM)
    pid = f"{src}:make"
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", pid]
    argv += ["--method", "toy-random", "--seeds", "4", "--budget", "10", "--jobs", "1"]
    out = tmp_path / "killed"
    proc = subprocess.Popen([*argv, "--out", str(out), "--quiet"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 180  # a loaded CI machine imports slowly
    try:
        while time.monotonic() < deadline:
            if (out / "results.csv").exists():
                _, runs = read_results(out)
                if runs:
                    break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    _, runs = read_results(out)
    assert 1 <= len(runs) < 4  # killed part-way
    done_before = set(runs)
    report = run_sweep([pid], ["toy-random"], "4", 10, out, jobs=1)
    assert set(report.skipped) == done_before and len(report.completed) == 4 - len(done_before)
    full = tmp_path / "full"
    run_sweep([pid], ["toy-random"], "4", 10, full, jobs=1)
    assert _strip_seconds(_rows(out)) == _strip_seconds(_rows(full))


class _FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar(tmp_path: Path) -> None:
    from boloop.bench.runner import Progress

    log = io.StringIO()
    run_sweep([TOY_LS], ["toy-random"], "3", 4, tmp_path / "a", jobs=1, progress=log)
    lines = log.getvalue().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("[" + "#" * 30 + "] 3/3 runs")

    tty = _FakeTTY()
    bar = Progress(2, tty, width=10, redraw_seconds=0.0)  # every advance redraws
    bar.advance(("p", "m", 0), 0.5)
    bar.advance(("p", "m", 1), 0.5)
    # the bar follows the steps; the count is of finished runs, and no estimate before one
    assert frames(tty.getvalue())[-1] == Frame(fill=5, width=10, count="0", total=2, left=None)
    bar.step(("p", "m", 0))
    assert frames(tty.getvalue())[-1] == Frame(fill=7, width=10, count="1", total=2, left=0)
    bar.advance(("p", "m", 0), 0.9)  # a late message of a finished run is ignored
    bar.step(("p", "m", 1))
    assert tty.getvalue().endswith("\n") and "[##########] 2/2 runs" in tty.getvalue()


def test_progress_of_a_pool_sweep_counts_whole_runs(tmp_path: Path) -> None:
    """``--jobs 2`` on a terminal: the bar moves with the steps of the runs in progress, the
    count is of whole runs (it read "1.3/72 runs"), and the time left is estimated only once a
    run has finished (the first estimate was "~4599s left" for a sweep of 40 s)."""
    src = tmp_path / "slow.py"
    src.write_text(_SLOW_PROBLEM)
    tty = _FakeTTY()
    report = run_sweep([f"{src}:make"], ["toy-random"], "6", 16, tmp_path / "out", jobs=2,
                       progress=tty)  # fmt: skip
    assert len(report.completed) == 6
    found = check_whole_counts_and_no_early_estimate(tty.getvalue(), 6)
    assert any(f.ahead_of_count for f in found)  # the bar moved with the steps
    assert any(f.left is not None for f in found)  # estimated once runs had finished
    assert found[-1].count == "6" and found[-1].fill == found[-1].width


def test_sweep_budget_is_the_horizon_of_mr_lpf(tmp_path: Path) -> None:
    """MR-LPF plans its rounds for T duels: a sweep with --budget T must run it with horizon T."""
    from boloop.algorithms import make_policy
    from boloop.problems import get
    from boloop.simulate import simulate

    report = run_sweep([TOY_PREF], ["mr-lpf"], [0], 12, tmp_path, jobs=1)
    assert not report.failed
    rows = _rows(tmp_path)
    problem = get(TOY_PREF)
    explicit = make_policy("mr-lpf", problem, 0, horizon=12)
    assert explicit.schedule == [4, 7, 1]
    expected = simulate(explicit, problem, 12, 0).step_rows()
    assert [float(r["regret"]) for r in rows] == [r["regret"] for r in expected]
    assert [int(r["step"]) for r in rows] == list(range(1, 13))
    # the default horizon plans other rounds: the comparison above can tell them apart
    default = simulate(make_policy("mr-lpf", problem, 0), problem, 12, 0).step_rows()
    assert [r["regret"] for r in default] != [r["regret"] for r in expected]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_says_what_is_kept_and_the_same_command_resumes(tmp_path: Path, jobs: str) -> None:
    """A real `boloop bench run` sent SIGINT (Ctrl-C) after its first completed run: exit 130 and
    one line saying how many runs are kept and that the same command resumes; the same command
    then skips exactly those and runs the others."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "slow.py"
    src.write_text(_SLOW_PROBLEM)
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", f"{src}:make"]
    argv += ["--method", "toy-random", "--seeds", "6", "--budget", "10", "--jobs", jobs]
    argv += ["--out", str(tmp_path / "out"), "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180  # a loaded CI machine imports slowly
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "out" / "results.csv").exists() and read_results(tmp_path / "out")[1]:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    line = err.strip().splitlines()[-1]
    _, runs = read_results(tmp_path / "out")
    kept = len(runs)
    assert 1 <= kept < 6
    assert line.startswith(f"boloop: interrupted; {kept} of 6 runs are kept in ")
    assert f"({kept} finished now, 0 were there before)" in line
    assert (
        f"Run the same command again to resume: it skips the runs in the file and runs the "
        f"other {6 - kept}" in line
    )
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (
        f"{6 - kept} run" in again.stdout and f"completed, {kept} skipped, 0 failed" in again.stdout
    )
