"""Notes from the command line, and the refusal of an outside datum while a query is open.

A team trial answered from pages, the API, Python and the CLI; the CLI's answers were the only
rows without a note, and the team kept who answered in the notes (``docs/web.md``). ``tell``,
``add`` and ``label`` take ``--note``. An ``add`` racing a tell was refused with "answer the
open query before adding observations", naming neither the study nor the query.
"""

from __future__ import annotations

import csv
from pathlib import Path

from boloop.study import create_study, load_study
from cli_runner import assert_refused, run_cli

SPACE = {"threshold": 0.5, "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}]}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_tell_add_and_label_store_the_note_given_on_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("lab", "randomized-straddle", SPACE, storage=url, seed=0)
    q = study.ask()
    res = run_cli(["study", "tell", "lab", str(q.id), "0.4", "--note", "alice, 2nd run", "--storage", url], cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = run_cli(["study", "add", "lab", "t=0.3", "0.2", "--note", "bob's own", "--storage", url], cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = run_cli(["study", "export", "lab", "--out", "lab.csv", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = _rows(tmp_path / "lab.csv")
    assert [(r["source"], r["value"], r["note"]) for r in rows] == [
        ("query", "0.4", "alice, 2nd run"),
        ("added", "0.2", "bob's own"),
    ]
    expert = create_study(
        "labels", "cobol", {"parameters": [{"name": "dose", "low": 0.0, "high": 1.0, "grid": 9}]},
        storage=url, seed=1,
    )  # fmt: skip
    assert expert.n_answered == 0
    res = run_cli(["study", "label", "labels", "dose=0.25", "accept", "--note", "Dr. K", "--storage", url], cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [r["note"] for r in load_study("labels", storage=url).history()] == ["Dr. K"]
    too_long = "x" * 2001
    res = run_cli(["study", "tell", "lab", "1", "0.4", "--note", too_long, "--storage", url], cwd=tmp_path)  # fmt: skip
    assert_refused(res, "note")


def test_an_add_while_a_query_is_open_names_the_study_and_the_query(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("lab", "randomized-straddle", SPACE, storage=url, seed=0)
    q = study.ask()
    before = len(study.events())
    res = run_cli(["study", "add", "lab", "t=0.3", "0.2", "--storage", url], cwd=tmp_path)
    line = assert_refused(res, "study 'lab'", f"answer the open query {q.id} (evaluate at t=")
    assert "nothing was stored" in line and "first (tell), then add this again" in line
    assert len(load_study("lab", storage=url).events()) == before


def test_an_added_measurement_withdrawn_can_be_added_again_at_once(tmp_path: Path) -> None:
    """(A newcomer's trial.) ``add`` warned about a typo and said to undo and add again; the
    undo opened a query, and the add was then refused. Withdrawing an added measurement opens
    no query: the right value is added at once."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("lab", "randomized-straddle", SPACE, storage=url, seed=0)
    for _ in range(6):
        q = study.ask()
        study.tell(q.id, 0.1 + 0.5 * float(q.params["t"]))
    res = run_cli(["study", "add", "lab", "t=0.3", "99.3", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "withdraw it with `boloop study undo lab" in res.stdout and "add it again" in res.stdout
    res = run_cli(["study", "undo", "lab", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "withdrawn: measurement -> 99.3; add the right value with `boloop study add lab" in (
        res.stdout
    )
    res = run_cli(["study", "add", "lab", "t=0.3", "0.25", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert load_study("lab", storage=url).history()[-1]["answer"] == 0.25
