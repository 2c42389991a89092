"""``boloop study ...`` (issue 8): the CLI gives the same queries as ``simulate`` for every
family, the interactive ``run`` loop reads answers from stdin and survives Ctrl-C, and bad input
exits with status 2 and a message while the stored log stays unchanged."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

from boloop.cli import main
from boloop.simulate import simulate
from boloop.study import create_study, load_study
from test_study import FAST_OPTIONS, PAIRS, _require, _without_metrics


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _written(points: Any) -> np.ndarray:
    """Points (n, d) to 15 significant digits: a grid value as a study shows it."""
    return np.vectorize(lambda v: float(f"{v:.15g}"))(np.asarray(points, dtype=np.float64))


def _as_text(kind: str, answer) -> str:
    """An answer as a person types it on the command line."""
    if kind == "label":
        return "accept" if answer else "reject"
    if kind == "compare":
        return "a" if answer == 0 else "b"
    if isinstance(answer, dict):
        return ",".join(f"{k}={v!r}" for k, v in answer.items())
    return repr(float(answer))


@pytest.mark.parametrize("problem_id,method", PAIRS)
def test_cli_gives_the_simulate_queries(tmp_path, capsys, problem_id, method):
    """Every CLI call loads the study afresh, so this also checks a reload at every step."""
    _require(problem_id, method)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    opts = (
        {**FAST_OPTIONS.get(method, {}), "fit_hyperparameters": False}
        if method in ("m-safeopt", "cobol")
        else {}
    )  # the API test replays fitted hyperparameters
    budget = 3 if method == "cobol" else 4
    trace = simulate(method, _without_metrics(problem_id), budget, seed=7, **opts)
    option_args = [a for k, v in opts.items() for a in ("--option", f"{k}={json.dumps(v)}")]
    code, out, err = _cli(
        capsys,
        "study",
        "create",
        "exp",
        "--method",
        method,
        "--problem",
        problem_id,
        "--seed",
        "7",
        "--storage",
        url,
        *option_args,
    )
    assert code == 0, err
    for rec in trace.records:
        code, out, err = _cli(capsys, "study", "ask", "exp", "--json", "--storage", url)
        assert code == 0, err
        q = json.loads(out)
        assert q["id"] == rec["query"] and q["kind"] == rec["kind"]
        names = list(q["a"] if q["kind"] == "compare" else q["params"])
        pts = (
            [[q["a"][n] for n in names], [q["b"][n] for n in names]]
            if q["kind"] == "compare"
            else [[q["params"][n] for n in names]]
        )
        # the same grid points, written as the space defines them (0.6, not linspace's
        # 0.6000000000000001: at most 15 significant digits, see Study._params)
        np.testing.assert_array_equal(_written(pts), _written(rec["points"]))
        code, out, err = _cli(
            capsys,
            "study",
            "tell",
            "exp",
            str(q["id"]),
            _as_text(rec["kind"], rec["answer"]),
            "--storage",
            url,
        )
        assert code == 0, err
    study = load_study("exp", storage=url)
    assert [r["answer"] for r in study.history()] == [r["answer"] for r in trace.records]


def test_cli_bad_input_exits_2_and_changes_nothing(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert (
        _cli(
            capsys,
            "study",
            "create",
            "b",
            "--method",
            "toy-random",
            "--problem",
            "safe/toy",
            "--seed",
            "0",
            "--storage",
            url,
        )[0]
        == 0
    )
    code, out, _ = _cli(capsys, "study", "ask", "b", "--json", "--storage", url)
    qid = json.loads(out)["id"]
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    before = con.execute("SELECT * FROM boloop_events").fetchall()
    for argv, match in [
        (("tell", "b", str(qid), "f=1,g=nan"), "finite"),
        (("tell", "b", str(qid), "1.0"), "needs"),
        (("tell", "b", str(qid), "f=1"), "missing"),
        (("tell", "b", str(qid + 5), "f=1,g=2"), "never asked"),
        (("tell", "b", "x", "f=1,g=2"), "query_id"),
        (("undo", "b"), "no answer to undo"),
        (("create", "b", "--method", "toy-random", "--problem", "safe/toy"), "already exists"),
        (("ask", "nope"), "no study named"),
        (("add", "b", "x0=0.5,x1=7", "f=1,g=2"), "outside the bounds"),
        (("add", "b", "x0=0.4,x1=0.5", "f=1"), "missing"),  # a grid action: its g is missing
        (("add", "b", "x0=0.5", "f=1,g=2"), "missing parameters"),
    ]:
        code, out, err = _cli(capsys, "study", *argv, "--storage", url)
        assert code == 2 and match in err, (argv, err)
    assert con.execute("SELECT * FROM boloop_events").fetchall() == before
    con.close()


def test_cli_status_list_undo_export(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    space = tmp_path / "space.json"
    space.write_text(
        json.dumps(
            {
                "family": "expert",
                "parameters": [
                    {"name": "temperature", "low": 20, "high": 80},
                    {"name": "ratio", "low": 0, "high": 1},
                ],
            }
        )
    )
    code, out, err = _cli(
        capsys,
        "study",
        "create",
        "e",
        "--method",
        "toy-random",
        "--space",
        str(space),
        "--seed",
        "1",
        "--storage",
        url,
    )
    assert code == 0 and "temperature" in out, err
    code, out, _ = _cli(capsys, "study", "ask", "e", "--storage", url)
    assert "accept or reject" in out and "temperature=" in out
    assert _cli(capsys, "study", "tell", "e", "0", "accept", "--storage", url)[0] == 0
    code, out, _ = _cli(capsys, "study", "ask", "e", "--json", "--storage", url)
    assert json.loads(out)["kind"] == "evaluate"  # the accepted point is measured next
    assert _cli(capsys, "study", "tell", "e", "1", "12.5", "--storage", url)[0] == 0
    code, out, _ = _cli(capsys, "study", "status", "e", "--storage", url)
    assert code == 0 and "answers:        2 in effect" in out and "-> 12.5" in out
    assert "recommendation:" in out
    code, out, _ = _cli(capsys, "study", "status", "e", "--json", "--storage", url)
    st = json.loads(out)
    assert st["counts"] == {"labels": 1, "evaluations": 1}
    assert set(st["recommendation"]) == {"temperature", "ratio"}
    code, out, _ = _cli(capsys, "study", "list", "--storage", url)
    assert out.startswith("e\texpert\ttoy-random")
    code, out, _ = _cli(capsys, "study", "verify", "e", "--storage", url)
    assert code == 0 and out.startswith("ok: study 'e' replays") and "2 answers" in out
    code, out, _ = _cli(capsys, "study", "undo", "e", "--storage", url)
    assert code == 0 and "withdrawn: query 1" in out
    out_csv = tmp_path / "e.csv"
    code, out, _ = _cli(capsys, "study", "export", "e", "--out", str(out_csv), "--storage", url)
    assert code == 0 and out == f"wrote 1 answer to {out_csv}\n"  # singular for one
    code, out, _ = _cli(capsys, "study", "list", "--storage", url)
    assert code == 0 and "\t1 answer\tcreated" in out
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("query_id,kind,source,asked_at,told_at,temperature,ratio")
    assert len(lines) == 2


def _one_parameter_study(tmp_path, capsys):
    """Study "e" (toy-random, one parameter t in [0, 1]) from a space file: (storage, space)."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"parameters": [{"name": "t", "low": 0, "high": 1}]}))
    code, _, err = _cli(
        capsys, "study", "create", "e", "--method", "toy-random", "--space", str(space),
        "--family", "expert", "--storage", url,
    )  # fmt: skip
    assert code == 0, err
    return url, space


def test_cli_export_never_overwrites_a_file_unless_forced(tmp_path, capsys):
    """A newcomer exported over their space file: an existing --out is refused, named, and left
    as it was; --force replaces it."""
    url, space = _one_parameter_study(tmp_path, capsys)
    before = space.read_bytes()
    code, out, err = _cli(capsys, "study", "export", "e", "--out", str(space), "--storage", url)
    assert code == 2 and out == ""
    assert err.startswith("boloop: error: ") and str(space) in err and "--force" in err
    assert space.read_bytes() == before
    code, out, _ = _cli(
        capsys, "study", "export", "e", "--out", str(space), "--force", "--storage", url
    )
    assert code == 0 and json.loads(space.read_text())["history"] == []


def test_cli_plot_never_overwrites_a_file_unless_forced(tmp_path, capsys):
    """As export: an existing --out (or the default NAME.svg) is refused, named, and left as it
    was; --force replaces it."""
    url, space = _one_parameter_study(tmp_path, capsys)
    notes = tmp_path / "notes.html"
    notes.write_text("my notes")
    code, out, err = _cli(capsys, "study", "plot", "e", "--out", str(notes), "--storage", url)
    assert code == 2 and out == ""
    assert err.startswith("boloop: error: ") and str(notes) in err and "--force" in err
    assert "nothing written" in err
    assert notes.read_text() == "my notes"
    code, out, _ = _cli(
        capsys, "study", "plot", "e", "--out", str(notes), "--force", "--storage", url
    )
    assert code == 0 and "<svg" in notes.read_text()


def _spawn_run(url: str, *extra: str) -> subprocess.Popen:
    """``boloop study run`` in a child that starts with Ctrl-C's default action.

    An ignored SIGINT is inherited through exec, and a Python started with SIGINT ignored never
    raises KeyboardInterrupt. pytest itself runs with SIGINT ignored when it is started as a
    background job of a non-interactive shell or under ``nohup`` (seen twice: the child then sat
    at its prompt through the Ctrl-C until the 60 s timeout), so the handler is the default one
    while the child is started, and put back after.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.default_int_handler) if main_thread else None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "boloop.cli", "study", "run", "p", "--storage", url, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, old)


class _PipeReader:
    """Collects a child's stdout in a thread so the test can wait for a prompt to appear."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.chunks: list[str] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while True:
            ch = self.stream.read(1)
            with self.changed:
                if not ch:
                    self.chunks.append("")
                    self.changed.notify_all()
                    return
                self.chunks.append(ch)
                self.changed.notify_all()

    @property
    def text(self) -> str:
        with self.lock:
            return "".join(self.chunks)

    def wait_for(self, done: Any, timeout: float = 120.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: done("".join(self.chunks)), timeout=timeout)

    def finish(self) -> str:
        self.thread.join(timeout=60)
        return self.text


def _waiting_at_prompt(text: str, n_prompts: int) -> bool:
    """Whether the loop has printed its ``n_prompts``-th ``[...] > `` prompt and waits there (it
    prints one prompt per line it reads, flushed before reading)."""
    return text.count("] > ") >= n_prompts and text.rstrip(" ").endswith("] >")


def test_run_reads_keys_from_stdin_and_survives_ctrl_c(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'run.db'}"
    code, _, err = _cli(
        capsys,
        "study",
        "create",
        "p",
        "--method",
        "toy-random",
        "--problem",
        "preference/toy",
        "--seed",
        "0",
        "--storage",
        url,
    )
    assert code == 0, err
    # typed keys: a, b, an invalid key (asked again, nothing stored), undo, b, a; then Ctrl-C
    # while the loop waits at the next prompt: clean exit 130, no traceback, nothing lost
    proc = _spawn_run(url)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    reader = _PipeReader(proc.stdout)
    proc.stdin.write("a\nb\nz\nu\nb\na\n")
    proc.stdin.flush()
    # synchronise on the pipe, not on time: six lines typed, so the seventh prompt is the loop
    # waiting for a key after storing the third answer (each prompt is flushed before the read)
    assert reader.wait_for(lambda text: _waiting_at_prompt(text, 7)), reader.text
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    out, err = reader.finish(), proc.stderr.read()
    assert proc.returncode == 130, (out, err)
    assert (
        "which is better?" in out and "is a duel: answer a/1" in out and "withdrawn: query 1" in out
    )
    assert "Traceback" not in err and "interrupted" in err
    study = load_study("p", storage=url)
    assert [r["answer"] for r in study.history()] == [0, 1, 0]
    # resume: the same open query is asked, and --max stops after that many answers
    open_id = study.ask().id
    proc = _spawn_run(url, "--max", "2")
    out, err = proc.communicate("b\nb\n", timeout=120)
    assert proc.returncode == 0, err
    assert f"query {open_id}:" in out
    assert [r["answer"] for r in load_study("p", storage=url).history()] == [0, 1, 0, 1, 1]


def test_run_label_and_measurement_prompts(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'run.db'}"
    assert (
        _cli(
            capsys,
            "study",
            "create",
            "p",
            "--method",
            "toy-random",
            "--problem",
            "expert/toy",
            "--seed",
            "2",
            "--storage",
            url,
        )[0]
        == 0
    )
    proc = _spawn_run(url)
    out, err = proc.communicate("y\nnan\n3.25\nn\n", timeout=120)  # end of input stops cleanly
    assert proc.returncode == 0, err
    assert "must be finite" in out and "end of input" in out
    hist = load_study("p", storage=url).history()
    assert [(r["kind"], r["answer"]) for r in hist] == [
        ("label", True),
        ("evaluate", 3.25),
        ("label", False),
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_run_takes_single_keys_on_a_terminal(tmp_path, capsys):
    """On a terminal, label and compare answers are single key presses (no Enter)."""
    import os
    import pty

    url = f"sqlite:///{tmp_path / 'tty.db'}"
    code, _, err = _cli(
        capsys,
        "study",
        "create",
        "p",
        "--method",
        "toy-random",
        "--problem",
        "preference/toy",
        "--seed",
        "0",
        "--storage",
        url,
    )
    assert code == 0, err
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "boloop.cli", "study", "run", "p", "--storage", url],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    try:
        for key, expected in ((b"b", [1]), (b"a", [1, 0])):
            os.write(master, key)
            deadline = time.time() + 60
            while time.time() < deadline:
                if [r["answer"] for r in load_study("p", storage=url).history()] == expected:
                    break
                time.sleep(0.05)
            assert [r["answer"] for r in load_study("p", storage=url).history()] == expected
        os.write(master, b"q")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out


def test_cli_writes_a_point_as_the_page_does(tmp_path, capsys):
    """``add``, ``label`` and ``status`` write a point as the web page and the messages do
    (``boloop.spaces.params_text``: the space's parameter order, 6 significant digits), not
    as a Python dict (``{'pressure': 2, 'flow': 1500000}``, as ``add`` and ``label`` did)."""
    from boloop.spaces import params_text

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    space = tmp_path / "space.json"
    space.write_text(
        json.dumps(
            {
                "parameters": [
                    {"name": "flow", "low": 0, "high": 2000000},
                    {"name": "pressure", "low": 1, "high": 5},
                ]
            }
        )
    )
    create = ["study", "create", "p", "--method", "cobol", "--space", str(space)]
    assert _cli(capsys, *create, "--seed", "0", "--storage", url)[0] == 0
    shown = params_text({"flow": 1500000.0, "pressure": 2.0})
    assert shown == "flow=1.5e+06, pressure=2"
    point = '{"pressure": 2, "flow": 1500000}'  # typed in another order, as integers
    code, out, err = _cli(capsys, "study", "add", "p", point, "0.4", "--storage", url)
    assert code == 0, err
    assert out.strip() == f"stored measurement at {shown} (1 answer)"
    code, out, err = _cli(capsys, "study", "label", "p", point, "accept", "--storage", url)
    assert code == 0, err
    assert out.strip() == f"stored label accept at {shown} (2 answers)"
    code, out, _ = _cli(capsys, "study", "status", "p", "--storage", url)
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("added")]
    assert len(rows) == 2 and all(
        f"added {w} {shown} -> " in r for w, r in zip(("measurement", "label"), rows)
    ), rows


def test_the_progress_line_calls_a_level_set_estimate_a_map():
    from boloop.cli.study import progress_line

    space = {"parameters": [{"name": "t", "low": 0, "high": 1, "grid": 11}], "threshold": 0.5}
    study = create_study("m", "randomized-straddle", space, storage="memory://progress", seed=0)
    q = study.ask()
    study.tell(q.id, 0.7)
    line = progress_line(study.status())
    assert "; map: " in line and "candidates estimated above the threshold 0.5" in line
    assert "best:" not in line


def _safe_units_study(url: str, x_params: list[dict[str, Any]]) -> Any:
    space = {
        "monotone": "dose",
        "h": 0.6,
        "parameters": [{"name": "dose", "low": 0, "high": 30, "grid": 16, "unit": "mg"}]
        + x_params,
    }
    study = create_study("dose", "m-safeopt", space, storage=url, seed=0, fit_hyperparameters=False)
    for _ in range(4):
        q = study.ask()
        study.tell(q.id, {"f": q.params["dose"] / 10, "g": 0.05})
    return study


def test_status_writes_the_safe_per_x_lists_with_the_x_they_belong_to(tmp_path, capsys):
    """A newcomer's dose study: status printed "best_s: 13 values in [0, 30]; first 4, 4, 2",
    which does not say which timing each dose belongs to. With one parameter besides the dose
    each value is written after its timing; the --json output keeps the plain lists."""
    url = f"sqlite:///{tmp_path / 'safe.db'}"
    timing = {"name": "timing", "low": 0, "high": 24, "grid": 13, "unit": "h"}
    study = _safe_units_study(url, [timing])
    rec = study.status()["recommendation"]
    code, out, err = _cli(capsys, "study", "status", "dose", "--storage", url)
    assert code == 0, err
    for key in ("best_s", "boundary_s"):
        pairs = "; ".join(
            f"timing={t:g} h: {s:g} mg" for t, s in zip(np.linspace(0, 24, 13), rec[key])
        )
        assert f"    {key} per timing: {pairs}\n" in out
    assert "values in [" not in out
    code, out, err = _cli(capsys, "study", "status", "dose", "--json", "--storage", url)
    assert code == 0, err
    shown = json.loads(out)["recommendation"]
    assert shown["best_s"] == rec["best_s"] and len(shown["best_s"]) == 13


def test_status_says_what_a_safe_per_x_list_follows_with_several_x(tmp_path, capsys):
    """With two parameters besides the dose a per-x list cannot be written by one name: status
    says what the list is indexed by."""
    url = f"sqlite:///{tmp_path / 'safe2.db'}"
    xs = [
        {"name": "timing", "low": 0, "high": 24, "grid": 4, "unit": "h"},
        {"name": "site", "low": 0, "high": 2, "grid": 3},
    ]
    _safe_units_study(url, xs)
    code, out, err = _cli(capsys, "study", "status", "dose", "--storage", url)
    assert code == 0, err
    assert (
        "    best_s, one dose per setting of (timing, site) in the space's order of those "
        "settings: 12 values in [" in out
    )
