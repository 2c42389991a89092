"""A study whose method plans for T answers (MR-LPF's horizon) and has them all: ``boloop study
run`` ends saying the study is complete, with the final recommendation (it used to end with
``boloop: error: MR-LPF has used all ... duels`` and exit status 2 after the last answer), and
``boloop study status`` no longer suggests ``boloop study ask``, which refuses such a study."""

from __future__ import annotations

import io

from boloop.cli import main

RECIPES = "name,sugar,flour\nplain,0.1,0.5\nsweet,0.9,0.5\nrich,0.5,0.9\nlight,0.3,0.2\n"


def _create(tmp_path, capsys, horizon: int) -> str:
    (tmp_path / "recipes.csv").write_text(RECIPES)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    args = ["study", "create", "cake", "--method", "mr-lpf", "--storage", url]
    args += ["--space", str(tmp_path / "recipes.csv"), "--option", f"horizon={horizon}"]
    assert main([*args, "--seed", "0"]) == 0
    capsys.readouterr()
    return url


def test_run_ends_when_the_horizon_is_used_up(tmp_path, capsys, monkeypatch):
    url = _create(tmp_path, capsys, horizon=2)
    monkeypatch.setattr("sys.stdin", io.StringIO("a\nb\na\n"))  # one answer more than T
    code = main(["study", "run", "cake", "--storage", url])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    assert out.count("stored. progress:") == 2
    assert "iteration 2 of T = 2" in out
    assert "study 'cake' is complete: the method asks no more: all T = 2 duels" in out
    assert "recommendation:" in out.split("is complete")[1]

    # run again on the finished study: the same end at once, nothing asked
    monkeypatch.setattr("sys.stdin", io.StringIO("a\n"))
    assert main(["study", "run", "cake", "--storage", url]) == 0
    again, err = capsys.readouterr()
    assert "-- DUEL" not in again and "is complete" in again and err == ""

    assert main(["study", "status", "cake", "--storage", url]) == 0
    status, _ = capsys.readouterr()
    assert "open query:     none (the method asks no more" in status
    assert "boloop study ask cake issues one" not in status

    # ask still refuses, with the method's reason
    assert main(["study", "ask", "cake", "--storage", url]) == 2
    assert "asks no more" in capsys.readouterr().err


def test_status_of_a_study_still_asking_suggests_ask(tmp_path, capsys):
    url = _create(tmp_path, capsys, horizon=3)
    assert main(["study", "status", "cake", "--storage", url]) == 0
    status, _ = capsys.readouterr()
    assert "open query:     none (boloop study ask cake issues one)" in status
