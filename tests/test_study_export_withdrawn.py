"""``export --withdrawn`` (an audit): the answers an undo withdrew, with their notes, beside the
answers in effect, and when each was withdrawn; the default export is unchanged."""

from __future__ import annotations

import csv
import json

import pytest

from boloop.cli import main
from boloop.study import create_study, load_study

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def _study(url: str):
    """Answers 0.0, 0.1 (note 'typo'), then 0.1 withdrawn and answered again 0.15; an added
    measurement withdrawn; the last two answers withdrawn by two undos, one more answer."""
    s = create_study("cake", "toy-random", SPACE, family="levelset", storage=url, seed=3)
    s.tell(s.ask().id, 0.0)
    q1 = s.ask()
    s.tell(q1.id, 1.0, note="typo: meant 0.1")
    s.undo()
    s.tell(s.ask().id, 0.1, note="corrected")
    s.add({"temperature": 30.0}, 0.7, note="wrong sample")
    s.undo()
    q2 = s.ask()
    s.tell(q2.id, 0.2)
    s.undo()
    s.undo()  # withdraws 0.1: query 1 is open again, query 2 is no longer asked
    s.tell(s.ask().id, 0.3, note="final")
    return s, q1


def _csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_export_with_withdrawn_answers_lists_every_answer_given(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    s, q1 = _study(url)
    assert s.n_answered == 2 and s.status()["withdrawn"] == 4
    s.export(tmp_path / "plain.csv")
    rows = _csv(tmp_path / "plain.csv")
    assert [r["value"] for r in rows] == ["0.0", "0.3"] and "withdrawn_at" not in rows[0]

    assert main(["study", "export", "cake", "--storage", url, "--out", str(tmp_path / "all.csv"),
                 "--withdrawn"]) == 0  # fmt: skip
    assert "wrote 2 answers and 4 withdrawn" in capsys.readouterr().out
    rows = _csv(tmp_path / "all.csv")
    assert [(r["value"], r["note"], bool(r["withdrawn_at"])) for r in rows] == [
        ("0.0", "", False),
        ("1.0", "typo: meant 0.1", True),
        ("0.1", "corrected", True),
        ("0.7", "wrong sample", True),
        ("0.2", "", True),
        ("0.3", "final", False),
    ]
    assert [r["source"] for r in rows] == ["query"] * 3 + ["added", "query", "query"]
    assert rows[3]["temperature"] == "30.0" and rows[3]["query_id"] == ""
    assert list(rows[0])[-2:] == ["note", "withdrawn_at"]
    # each withdrawn row is the answer as it was given: the query, the point, the times
    events = s.events()
    told = {e["seq"]: e for e in events if e["kind"] == "told"}
    undo_times = sorted(e["created_at"] for e in events if e["kind"] == "withdrawn")
    assert sorted(r["withdrawn_at"] for r in rows if r["withdrawn_at"]) == undo_times
    first = next(e for e in told.values() if e["payload"].get("note") == "typo: meant 0.1")
    assert rows[1]["query_id"] == str(q1.id) and rows[1]["told_at"] == first["created_at"]
    assert float(rows[1]["temperature"]) == pytest.approx(q1.params["temperature"])
    # query 2 was asked, answered and withdrawn, then no longer asked: its point is kept
    asked2 = [e for e in events if e["kind"] == "asked" and e["query_id"] == 2][0]
    assert float(rows[4]["temperature"]) == pytest.approx(asked2["payload"]["query"]["x"][0])
    assert rows[4]["asked_at"] == asked2["created_at"]


def test_json_export_and_history_with_withdrawn_and_the_default_unchanged(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    s, _ = _study(url)
    s.export(tmp_path / "all.json", withdrawn=True)
    doc = json.loads((tmp_path / "all.json").read_text())
    hist = doc["history"]
    assert [h["answer"] for h in hist] == [0.0, 1.0, 0.1, 0.7, 0.2, 0.3]
    assert [h["withdrawn_at"] is None for h in hist] == [True, False, False, False, False, True]
    s.export(tmp_path / "plain.json")
    plain = json.loads((tmp_path / "plain.json").read_text())["history"]
    assert plain == s.history() and all("withdrawn_at" not in h for h in plain)
    assert [h for h in hist if h["withdrawn_at"] is None] == [
        {**h, "withdrawn_at": None} for h in plain
    ]
    again = load_study("cake", storage=url)  # from the log alone, a new process
    assert again.history(withdrawn=True) == s.history(withdrawn=True)
    assert again.history(last=2, withdrawn=True) == s.history(withdrawn=True)[-2:]


def test_the_page_export_link_takes_withdrawn(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'a.db'}"
    _study(url)
    client = TestClient(create_app(url, None))
    plain = client.get("/studies/cake/export.csv").text
    audit = client.get("/studies/cake/export.csv?withdrawn=1").text
    assert plain.count("\n") == 3 and "typo" not in plain and "withdrawn_at" not in plain
    assert audit.count("\n") == 7 and "typo: meant 0.1" in audit
    assert audit.splitlines()[0].endswith(",note,withdrawn_at")
