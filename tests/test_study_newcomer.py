"""Issue 15: a study that feels right to a newcomer. Every bad input met by a person at the
terminal is one ``boloop: error:`` line with exit status 2 and nothing stored; ``status`` speaks
one vocabulary; labels and duels share one answer grammar. Through the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boloop.errors import AnswerTypeError, InvalidInputError
from boloop.study import create_study


def _boloop(cwd: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "BOLOOP_STORAGE": f"sqlite:///{cwd / 'lab.db'}"}
    return subprocess.run(
        [sys.executable, "-m", "boloop.cli", *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _events(cwd: Path) -> list[tuple]:
    db = cwd / "lab.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        return con.execute("SELECT seq, kind, query_id, payload FROM boloop_events").fetchall()


def _refused(res: subprocess.CompletedProcess, *words: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("boloop: error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]


def _write(path: Path, doc: dict) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


# -- 1. every error clear, exit 2, nothing stored ---------------------------------------------
def test_bad_create_inputs_are_refused_before_anything_is_stored(tmp_path):
    cases = [
        (
            ("--problem", "preference/toy", "--option", "horizon=abc"),
            ("horizon='abc'", "mr-lpf"),
            "mr-lpf",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "ls.json",
                    {"threshold": 0.5, "parameters": [{"name": "t", "low": 0, "high": 1}]},
                ),
            ),
            ("'threshold'", "levelset", "preference"),
            "mr-lpf",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "typo.json",
                    {
                        "threshold": 0.5,
                        "parameters": [{"name": "t", "low": 0, "high": 1}],
                        "settings": {"noise_varaince": 0.1},
                    },
                ),
            ),
            ("noise_varaince", "noise_variance"),
            "randomized-straddle",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "safe.json",
                    {
                        "monotone": "dose",
                        "h": 0.9,
                        "threshold": 0.5,
                        "parameters": [
                            {"name": "dose", "low": 0, "high": 1, "grid": 5},
                            {"name": "t", "low": 0, "high": 1, "grid": 5},
                        ],
                    },
                ),
            ),
            ("'threshold'", "'h'"),
            "m-safeopt",
        ),
    ]
    for args, words, method in cases:
        res = _boloop(tmp_path, "study", "create", "s", "--method", method, *args)
        _refused(res, *words)
        assert not (tmp_path / "lab.db").exists()  # nothing created, not even the database


def test_settings_the_method_reads_are_accepted(tmp_path):
    pr = _write(
        tmp_path / "pr.json",
        {
            "parameters": [{"name": "t", "low": 0, "high": 1}],
            "settings": {"budget": 12, "lam": 0.1},
        },
    )
    res = _boloop(tmp_path, "study", "create", "p", "--method", "mr-lpf", "--space", pr)
    assert res.returncode == 0, res.stderr
    res = _boloop(tmp_path, "study", "create", "c", "--method", "cobol", "--space", pr)
    _refused(res, "['budget', 'lam']", "cobol")


@pytest.fixture()
def lab(tmp_path):
    """A preference study with one answer, in tmp_path/lab.db."""
    study = create_study(
        "cake",
        "mr-lpf",
        problem="preference/toy",
        storage=f"sqlite:///{tmp_path / 'lab.db'}",
        seed=0,
        horizon=20,
    )
    q = study.ask()
    study.tell(q.id, "a")
    study.ask()
    return tmp_path


@pytest.mark.parametrize(
    "argv,words",
    [
        (("study", "run", "cake", "--max", "0"), ("--max", "0")),
        (("study", "run", "cake", "--max", "-1"), ("--max", "-1")),
        (("study", "status", "cake", "--last", "-1"), ("--last", "-1")),
        (("study", "export", "cake", "--out", "missing/dir/h.csv"), ("does not exist",)),
        (("study", "tell", "cake", "7", "a"), ("never asked", "the open query is 1")),
        (("study", "add", "cake", "{bad", "1"), ("PARAMS",)),
    ],
)
def test_bad_study_commands_exit_2_with_the_log_unchanged(lab, argv, words):
    before = _events(lab)
    res = _boloop(lab, *argv, stdin="a\n")
    _refused(res, *words)
    assert "None" not in res.stderr
    assert _events(lab) == before
    assert not (lab / "missing").exists()


def test_api_refuses_the_same_bad_values(lab):
    from boloop.study import load_study
    from boloop.study.cli import run_loop

    study = load_study("cake", storage=f"sqlite:///{lab / 'lab.db'}")
    with pytest.raises(InvalidInputError, match="last"):
        study.status(last=-1)
    with pytest.raises(InvalidInputError, match="does not exist"):
        study.export(lab / "nowhere" / "h.json")
    with pytest.raises(InvalidInputError, match="--max"):
        run_loop(study, None, None, max_answers=0)  # type: ignore[arg-type]
    with pytest.raises(AnswerTypeError):
        study.tell(study.ask().id, "maybe")
