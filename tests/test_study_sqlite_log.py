"""The quick SQLite path of a study (issue 15): a plain SQLite file of boloop's schema is read and
appended with Python's sqlite3, giving what SQLAlchemy's Storage gives; anything else is left to
Storage and its messages."""

from __future__ import annotations

import json
import sqlite3

import pytest

from boloop.errors import QueryStateError, StorageError, UnknownIdError
from boloop.study import create_study, list_studies, load_study, sqlite_log, storage
from boloop.study.sqlite_log import open_sqlite_log
from boloop.study.storage import Storage


@pytest.fixture()
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'lab.db'}"


def _study(url, n=3):
    s = create_study("s", "toy-random", problem="levelset/toy", storage=url, seed=0)
    for k in range(n):
        q = s.ask()
        s.tell(q.id, float(k))
    return s


def test_reads_what_storage_reads_and_storage_reads_what_it_writes(url):
    _study(url)
    quick, store = open_sqlite_log(url), Storage(url, create=False)
    assert quick is not None and quick.url == store.url
    sid = quick.study_id("s")
    assert sid == store.study_id("s")
    assert quick.study_names() == store.study_names()
    assert quick.events(sid) == store.events(sid)
    assert quick.events(sid, after=3) == store.events(sid, after=3)
    assert quick.created_events(["s", "nope"]) == store.created_events(["s", "nope"])
    assert quick.created_events(["s"])["s"] == store.events(sid)[0]
    quick.put_snapshot(sid, 2, "f" * 64, b"\x00data")
    assert store.get_snapshot(sid) == (2, "f" * 64, b"\x00data") == quick.get_snapshot(sid)
    with quick.transaction(write=True) as tx:
        ev = tx.append(sid, len(store.events(sid)), "asked", 99, {"query": {"x": [0.5]}})
    assert store.events(sid)[-1] == ev
    with pytest.raises(UnknownIdError, match=r"stored studies: \['s'\]"):
        quick.study_id("nope")


def test_a_loaded_study_answers_undoes_and_lists_through_the_quick_path(url):
    s = _study(url)
    loaded = load_study("s", storage=url)
    assert loaded.history() == s.history()
    q = loaded.ask()
    loaded.tell(q.id, 7.0, note="by the quick path")
    assert s.history()[-1]["note"] == "by the quick path"  # the SQLAlchemy study sees it
    assert loaded.undo()["answer"] == 7.0
    assert s.ask().id == q.id  # the withdrawn query is open again, for both
    [row] = list_studies(url)
    assert row["answered"] == 3 and row["open_query"] == q.id
    assert load_study("s", storage=url, full_replay=True).history() == s.history()


def test_two_tellers_of_one_query_one_wins_across_the_two_paths(url, monkeypatch):
    """The quick writer loses a race it could not see (its catch-up read hidden once): the
    UNIQUE(study_id, seq) insert fails, the study reloads and reports the answer."""
    a = _study(url, n=1)
    b = load_study("s", storage=url)
    q = a.ask()
    assert b.ask().id == q.id
    a.tell(q.id, 1.0)
    real = sqlite_log.SQLiteTransaction.events
    hidden = {"n": 1}

    def stale(self, study_id, after=-1):
        if hidden["n"]:
            hidden["n"] -= 1
            return []
        return real(self, study_id, after)

    monkeypatch.setattr(sqlite_log.SQLiteTransaction, "events", stale)
    with pytest.raises(QueryStateError, match="already answered"):
        b.tell(q.id, 2.0)
    assert hidden["n"] == 0
    told = [e for e in Storage(url).events(1) if e.kind == "told"]
    assert [e.payload["answer"] for e in told] == [0.0, 1.0]


def test_anything_but_a_plain_boloop_sqlite_file_is_left_to_storage(tmp_path, url):
    assert open_sqlite_log(url) is None  # no file yet: Storage says "no studies"
    with pytest.raises(UnknownIdError):
        load_study("s", storage=url)
    assert not (tmp_path / "lab.db").exists()  # and nothing was created
    _study(url)
    assert open_sqlite_log(url + "?timeout=5") is None
    assert open_sqlite_log("sqlite://") is None
    assert open_sqlite_log("postgresql://u@h/db") is None
    assert open_sqlite_log(str(tmp_path / "lab.db")) is not None  # a bare *.db path
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE t (x)")
    assert open_sqlite_log(f"sqlite:///{foreign}") is None
    with pytest.raises(StorageError, match="not a boloop database"):
        load_study("s", storage=f"sqlite:///{foreign}")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert open_sqlite_log(f"sqlite:///{tmp_path / 'junk.db'}") is None


def test_another_schema_version_goes_to_storage_and_its_message(url):
    _study(url)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as con:
        con.execute("UPDATE boloop_meta SET value = '99' WHERE key = 'schema_version'")
    assert open_sqlite_log(url) is None
    with pytest.raises(StorageError, match="schema version 99"):
        load_study("s", storage=url)


def test_reads_the_schema_version_storage_writes():
    """Bumping storage.SCHEMA_VERSION (with a migration) must come with this module's update."""
    assert sqlite_log.SCHEMA_VERSION == storage.SCHEMA_VERSION
    assert sqlite_log.BUSY_TIMEOUT_SECONDS == storage.BUSY_TIMEOUT_SECONDS


def test_export_and_status_from_the_quick_path(tmp_path, url):
    _study(url)
    s = load_study("s", storage=url)
    s.export(tmp_path / "h.json")
    doc = json.loads((tmp_path / "h.json").read_text())
    assert [r["answer"] for r in doc["history"]] == [0.0, 1.0, 2.0]
    assert s.status()["storage"] == Storage(url).url
