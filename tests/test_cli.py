"""The boloop command: bench run/plot/summary, problems, methods, demo, errors as one line + exit 2."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import boloop
from boloop.algorithms import register_method
from boloop.algorithms.toy import RandomEvaluate
from boloop.cli import build_parser, main
from boloop.errors import InvalidInputError


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_in_a_subprocess() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "boloop.cli", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"boloop {boloop.__version__}"


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 0 and "bench" in out and "problems" in out


def test_problems_and_methods_by_family(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "problems")
    assert code == 0
    for fam in ("levelset", "preference", "safe", "expert"):
        assert f"{fam}:" in out and f"{fam}/toy" in out
    code, out, _ = run(capsys, "methods", "--family", "expert")
    assert code == 0 and out.splitlines()[0] == "expert:" and "toy-random" in out
    assert "levelset:" not in out
    code, out, _ = run(capsys, "metrics", "--family", "common")
    assert code == 0 and "f1_score" in out and "simple_regret" in out


def test_bench_run_summary_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = str(tmp_path / "r")
    argv = ["bench", "run", "--problem", "levelset/toy", "safe/toy", "--method", "toy-random"]
    code, out, err = run(capsys, *argv, "--seeds", "2", "--budget", "4", "--out", out_dir)
    assert code == 0 and "4 runs completed, 0 skipped, 0 failed" in out
    assert "4/4 runs" in err  # the progress bar goes to stderr
    with open(Path(out_dir) / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 16
    code, out, _ = run(capsys, *argv, "--seeds", "1-2", "--budget", "4", "--out", out_dir)
    assert code == 0 and "2 runs completed, 2 skipped, 0 failed" in out
    code, out, _ = run(capsys, "bench", "summary", out_dir)
    assert code == 0 and "### safe/toy" in out and "final unsafe" in out
    # every table says what its "±" is
    tables = out.split("### ")[1:]
    assert len(tables) == 2
    assert all("mean ± standard error over the seeds" in t.split("|")[-1] for t in tables)
    code, out, _ = run(capsys, "bench", "plot", out_dir, "--out", str(tmp_path / "png"))
    assert code == 0 and len(out.split()) == 2 + 4
    assert all(Path(p).exists() for p in out.split())


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--problem", "levelset/nope", "--method", "toy-random"], "valid ids: "),
        (["--problem", "levelset/toy", "--method", "nope"], "toy-random"),
        (["--problem", "levelset/toy", "--method", "toy-random", "--seeds", "5-3"], "5-3"),
        (["--problem", "levelset/toy", "--method", "toy-random", "--budget", "0"], "budget"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "bench", "run", *argv, "--out", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("boloop: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_summary_of_missing_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "bench", "summary", str(tmp_path))
    assert code == 2 and "no results file" in err


@register_method("zz-cli-crash", "levelset", "test only: raises in its first ask")
def _crash(problem, seed, **options):  # type: ignore[no-untyped-def]
    class Crash(RandomEvaluate):
        def _propose(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    return Crash(problem.space, seed)


def test_failed_run_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "bench",
        "run",
        "--problem",
        "levelset/toy",
        "--method",
        "zz-cli-crash",
        "--budget",
        "4",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert code == 1 and "FAILED zz-cli-crash on levelset/toy seed 0: RuntimeError: boom" in out


def test_demo_command(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from boloop.bench import demo

    small = [demo.DemoEntry("preference", "preference/toy", ("toy-random",), 3, "2", toy=True)]
    monkeypatch.setattr(demo, "DEMO", small)
    code, out, err = run(capsys, "demo", "--out", str(tmp_path), "--jobs", "1")
    assert code == 0 and "### preference/toy" in out and "3 plots in" in out
    assert "demo: preference/toy with toy-random" in err


def test_study_hook_is_optional(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    usage = capsys.readouterr().out
    assert all(name in usage for name in ("bench", "problems", "methods", "demo"))


def test_methods_of_two_families_go_into_two_commands_into_one_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One sweep runs every method on every problem: methods of two families are refused with
    the two commands that work, and those two commands into the same --out give one CSV with
    both families' columns that summary and plot cover."""
    out_dir = str(tmp_path / "r")
    argv = ["bench", "run", "--problem", "levelset/toy", "preference/toy"]
    code, out, err = run(capsys, *argv, "--method", "us", "mr-lpf", "--out", out_dir)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "is for preference problems, not levelset" in err
    assert "takes the methods of one family" in err and "into the same --out" in err
    commands = re.findall(r"`(--problem [^`]*)`", err)
    assert commands == [
        "--problem levelset/toy --method us",
        "--problem preference/toy --method mr-lpf",
    ]
    assert not Path(out_dir).exists()
    for command in commands:
        extra = ["--seeds", "2", "--budget", "3", "--out", out_dir, "--quiet"]
        code, out, _ = run(capsys, "bench", "run", *command.split(), *extra)
        assert code == 0 and "2 runs completed" in out
    with open(Path(out_dir) / "results.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert {"loss", "fscore", "simple_regret"} <= set(reader.fieldnames or ())
    assert {(r["problem"], r["method"]) for r in rows} == {
        ("levelset/toy", "us"),
        ("preference/toy", "mr-lpf"),
    }
    code, out, _ = run(capsys, "bench", "summary", out_dir)
    assert code == 0 and "### levelset/toy" in out and "### preference/toy" in out


def test_bench_plot_names_its_optional_dependency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "plot", "--help"])
    assert "pip install 'boloop[plot]'" in " ".join(capsys.readouterr().out.split())
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    code, out, err = run(capsys, "bench", "plot", str(tmp_path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "needs matplotlib" in err and "pip install 'boloop[plot]'" in err


def _falling_results(path: Path) -> Path:
    """A results.csv of two methods whose loss falls from 40 to 0.02 (3.3 decades) while their
    fscore stays between 0.5 and 0.9."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["problem", "method", "seed", "step", "loss", "fscore", "ask_seconds", "tell_seconds"]
        )
        for method, rate in (("a", 0.92), ("b", 0.95)):
            for seed in range(3):
                for step in range(1, 101):
                    loss = max(40 * rate**step, 0.02) * (1 + 0.05 * seed)
                    w.writerow(["p/x", method, seed, step, loss, 0.5 + 0.004 * step * rate, 0, 0])
    return path


def test_choose_y_scale() -> None:
    from boloop.bench.report import choose_y_scale

    falling = np.array([40.0, 3.0, 0.2, 0.02, np.nan])
    assert choose_y_scale(falling) == "log"  # 3.3 decades, all positive
    assert choose_y_scale(np.array([0.5, 0.3, 0.9])) == "linear"
    assert choose_y_scale(np.array([1.0, 0.011])) == "linear"  # 1.96 decades: not more than 2
    assert choose_y_scale(np.array([1.0, 0.009])) == "log"
    assert choose_y_scale(np.array([40.0, 0.0, 0.02])) == "linear"  # a zero: no auto log
    assert choose_y_scale(np.array([40.0, 0.0]), "log") == "symlog"  # forced, zero kept
    assert choose_y_scale(np.array([0.5, 0.3]), "log") == "log"
    assert choose_y_scale(falling, "linear") == "linear"
    with pytest.raises(InvalidInputError, match="y_scale"):
        choose_y_scale(falling, "logarithmic")


def test_bench_plot_log_y(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A loss spanning decades is drawn on a log axis by default (as with --log-y); a metric
    within one decade stays linear (as with --linear-y); the two flags exclude each other."""
    pytest.importorskip("matplotlib")
    res = str(_falling_results(tmp_path / "r"))
    pngs = {}
    for name, flags in (("auto", []), ("log", ["--log-y"]), ("linear", ["--linear-y"])):
        code, out, _ = run(capsys, "bench", "plot", res, "--out", str(tmp_path / name), *flags)
        assert code == 0 and len(out.split()) == 2
        pngs[name] = {
            p: Path(tmp_path / name / p).read_bytes() for p in ("p_x__loss.png", "p_x__fscore.png")
        }
    assert pngs["auto"]["p_x__loss.png"] == pngs["log"]["p_x__loss.png"]
    assert pngs["auto"]["p_x__loss.png"] != pngs["linear"]["p_x__loss.png"]
    assert pngs["auto"]["p_x__fscore.png"] == pngs["linear"]["p_x__fscore.png"]
    assert pngs["auto"]["p_x__fscore.png"] != pngs["log"]["p_x__fscore.png"]
    with pytest.raises(SystemExit) as exc:
        main(["bench", "plot", res, "--log-y", "--linear-y"])
    assert exc.value.code == 2 and "not allowed with" in capsys.readouterr().err
