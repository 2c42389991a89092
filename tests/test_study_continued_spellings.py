""" "Continued as" whatever URL a person reaches the storage by (a newcomer's trial: a study
continued through ``...@127.0.0.1:55432/boloop`` was not said to be continued through
``...@localhost:55432/boloop`` or the server's socket; its status still suggested continuing it
again, and its page took answers that were not carried over).

Each test runs on SQLite (the file by its absolute path, as a bare relative path, and through a
symbolic link to its directory) and on a real PostgreSQL server (by ``127.0.0.1``, by
``localhost`` and by its Unix socket, ``tests/pg_server.py``): the continuation made through one
spelling is seen through every other, by the API, the CLI and the web page. A continuation made
by an earlier boloop (its record names the old study's storage by the URL text it was opened
with) is still read and found.
"""

from __future__ import annotations

import dataclasses

import pytest

from boloop.study import create_study, list_studies, load_study
from boloop.study.storage import open_storage
from boloop.study.storage_migrate import migrate_studies
from cli_runner import run_cli

PG = pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))
SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


@pytest.fixture(params=["sqlite", PG])
def spellings(request, tmp_path, monkeypatch) -> list[str]:
    """Three URLs of one fresh storage, each written another way."""
    if request.param == "sqlite":
        real = tmp_path / "lab"
        real.mkdir()
        (tmp_path / "link").symlink_to(real, target_is_directory=True)
        monkeypatch.chdir(real)  # the bare name is relative to the working directory
        return [
            f"sqlite:///{real / 'lab.db'}",
            "lab.db",
            f"sqlite:///{tmp_path / 'link' / 'lab.db'}",
        ]
    server = request.getfixturevalue("pg_server")
    database = server.new_database().rsplit("/", 1)[1]
    return server.spellings(database)


def _answered(url: str, name: str, answers: int = 3):
    study = create_study(name, "toy-random", SPACE, family="levelset", storage=url, seed=3)
    for k in range(answers):
        q = study.ask()
        study.tell(q.id, 0.1 * k, note="bob" if k == 0 else None)
    return study


def _continued_as(url: str, name: str) -> list[str]:
    """What the API says, through ``url``, that study ``name`` was continued as; the study's
    status and the list of studies must agree."""
    study = load_study(name, storage=url)
    said = study.continued_as()
    assert study.status(last=0)["continued_as"] == said
    rows = {r["name"]: r for r in list_studies(url)}
    assert rows[name]["continued_as"] == said
    return said


def test_a_continuation_is_seen_through_every_spelling_of_its_storage(spellings, tmp_path):
    first, second, third = spellings
    _answered(first, "dose")
    create_study("dose-2", from_study="dose", storage=second)  # continued by another spelling
    for url in spellings:
        assert _continued_as(url, "dose") == ["dose-2"], url
        assert _continued_as(url, "dose-2") == [], url
    # the command line through the third spelling
    out = run_cli(["study", "status", "dose", "--storage", third], cwd=tmp_path).stdout
    assert "continued as:   'dose-2'" in out
    out = run_cli(["study", "list", "--storage", third], cwd=tmp_path).stdout
    assert "continued as dose-2" in out.splitlines()[0]
    # a second continuation through the first spelling joins the first
    create_study("dose-3", from_study="dose", storage=first, seed=5)
    assert _continued_as(third, "dose") == ["dose-2", "dose-3"]


def test_the_page_of_a_continued_study_says_so_through_another_spelling(spellings):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    first, second, _ = spellings
    _answered(first, "dose")
    create_study("dose-2", from_study="dose", storage=first)
    client = TestClient(create_app(second, None))
    page = client.get("/studies/dose")
    assert page.status_code == 200
    assert 'id="continued"' in page.text and 'href="/studies/dose-2"' in page.text
    assert "Answers given here now are not carried over" in page.text
    assert "continued as dose-2" in client.get("/").text


def test_a_study_of_the_same_name_elsewhere_is_not_taken_for_the_one_continued(tmp_path):
    """``dose`` of storage A continued into storage B, where another ``dose`` lives: B's
    ``dose`` is not said to be continued. Once A's ``cake``, continued into B as ``cake-2``, is
    migrated to B, B's copy of ``cake`` is: the link is the study's, not its storage's URL."""
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _answered(a, "dose")
    _answered(b, "dose", answers=2)
    create_study("dose-2", from_study="dose", from_storage=a, storage=b)
    assert _continued_as(b, "dose") == [] and _continued_as(a, "dose") == []
    _answered(a, "cake")
    create_study("cake-2", from_study="cake", from_storage=a, storage=b)
    migrate_studies(a, b, ["cake"])
    assert _continued_as(b, "cake") == ["cake-2"]


def _as_an_earlier_boloop_recorded_it(url: str, name: str, copy: str) -> None:
    """Store a copy of study ``name``'s log as ``copy``, its ``from_study`` record as a boloop
    before this one wrote it: the old study's storage as URL text and no identity."""
    store = open_storage(url, create=False)
    events = store.events(store.study_id(name))
    record = dict(events[0].payload["from_study"])
    del record["created_at"]
    first = dataclasses.replace(events[0], payload={**events[0].payload, "from_study": record})
    store.import_study(copy, first.created_at, [first, *events[1:]])


def test_a_continuation_an_earlier_boloop_recorded_is_still_found(spellings):
    """A record without the old study's identity (an earlier boloop's) names the storage as it
    was spelled then. It is found through that spelling, through any other once an answer was
    carried (the carried answer's note names the query and the time it was given, which the old
    study's log holds), and, without an answer carried, through another spelling of the same
    SQLite file; not through another spelling of a PostgreSQL server (docs/studies.md)."""
    first, second, third = spellings
    _answered(first, "dose")
    create_study("dose-new", from_study="dose", storage=first)
    _as_an_earlier_boloop_recorded_it(first, "dose-new", "dose-then")
    _answered(first, "empty", answers=0)
    create_study("empty-new", from_study="empty", storage=first)
    _as_an_earlier_boloop_recorded_it(first, "empty-new", "empty-then")
    load_study("dose-then", storage=third).ask()  # its events are read and it loads
    for url in spellings:
        assert _continued_as(url, "dose") == ["dose-new", "dose-then"], url
    assert _continued_as(first, "empty") == ["empty-new", "empty-then"]
    sqlite = first.startswith("sqlite")
    for url in (second, third):
        expected = ["empty-new", "empty-then"] if sqlite else ["empty-new"]
        assert _continued_as(url, "empty") == expected, url


def test_a_note_that_only_looks_carried_links_nothing(tmp_path):
    """A copy of an earlier boloop's continuation in another storage, beside another study of
    the old one's name (the same answers, given at other times): its first carried answer is
    none of that study's, so they are not linked."""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    _answered(url, "dose")
    create_study("dose-new", from_study="dose", storage=url)
    other = f"sqlite:///{tmp_path / 'b.db'}"
    _answered(other, "dose")  # the same answers, at other times
    store = open_storage(url, create=False)
    events = store.events(store.study_id("dose-new"))
    record = {k: v for k, v in events[0].payload["from_study"].items() if k != "created_at"}
    record["storage"] = "sqlite:////elsewhere/lab.db"  # as it was spelled then, now unknown
    first = dataclasses.replace(events[0], payload={**events[0].payload, "from_study": record})
    target = open_storage(other)
    target.import_study("dose-new", first.created_at, [first, *events[1:]])
    assert _continued_as(other, "dose") == []


def test_a_study_of_a_newer_boloop_beside_it_does_not_stop_the_status(tmp_path):
    """Looking for continuations reads every other study's ``created`` event: a study whose
    log this boloop cannot read (an event kind of a newer boloop), or whose ``created`` event is
    corrupt, is passed over, and the study's status still says where it was continued."""
    import sqlite3

    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered(url, "dose")
    create_study("dose-2", from_study="dose", storage=url)
    _answered(url, "newer", answers=1)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO boloop_events (study_id, seq, kind, query_id, payload, created_at) "
            "SELECT study_id, MAX(seq) + 1, 'teleported', NULL, '{}', '2030-01-01T00:00:00Z' "
            "FROM boloop_events WHERE study_id = (SELECT study_id FROM boloop_studies "
            "WHERE name = 'newer')"
        )
    assert _continued_as(url, "dose") == ["dose-2"]
    _answered(url, "broken", answers=0)
    create_study("dose-3", from_study="dose", storage=url)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE boloop_events SET payload = 'not json' WHERE seq = 0 AND study_id = "
            "(SELECT study_id FROM boloop_studies WHERE name = 'broken')"
        )
    assert load_study("dose", storage=url).continued_as() == ["dose-2", "dose-3"]


class _CountingStore:
    """A storage that notes which logs and ``created`` events were read through it."""

    def __init__(self, url: str) -> None:
        self._inner = open_storage(url, create=False)
        self.url = self._inner.url
        self.logs: list[int] = []
        self.first: list[str] = []

    def __getattr__(self, attr: str):
        return getattr(self._inner, attr)

    def events(self, study_id: int, after: int = -1):
        self.logs.append(study_id)
        return self._inner.events(study_id, after)

    def created_events(self, names):
        self.first += names
        return self._inner.created_events(names)


def test_continuations_are_found_from_the_created_events_each_read_once(tmp_path):
    """No log is read for a continuation this boloop recorded: its record names the old
    study's creation time, which the list of studies gives; each other study's ``created``
    event is read once in a process. Logs are read for an earlier boloop's record only."""
    from boloop.study.carry import continuations

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _answered(url, "dose")
    create_study("dose-2", from_study="dose", storage=url)
    _answered(url, "cake", answers=1)
    store = _CountingStore(url)
    assert continuations(store, "dose") == ["dose-2"]
    assert store.logs == [] and sorted(store.first) == ["cake", "dose-2"]
    assert continuations(store, "cake") == [] and sorted(store.first) == ["cake", "dose", "dose-2"]
    assert continuations(store, "dose") == ["dose-2"] and len(store.first) == 3
    create_study("dose-3", from_study="dose", storage=url, seed=5)
    assert continuations(store, "dose") == ["dose-2", "dose-3"]
    assert store.first[3:] == ["dose-3"] and store.logs == []
    # an earlier boloop's record naming this storage's URL: no log is read either
    _as_an_earlier_boloop_recorded_it(url, "dose-2", "dose-then")
    assert continuations(store, "dose") == ["dose-2", "dose-3", "dose-then"]
    assert store.logs == []
    # one naming a storage text that is not this file: the carried answer is looked up in the
    # two logs, the old study's once
    events = store.events(store.study_id("dose-2"))
    record = {k: v for k, v in events[0].payload["from_study"].items() if k != "created_at"}
    for copy in ("dose-moved", "dose-moved-2"):
        record["storage"] = f"sqlite:///{tmp_path / 'gone' / 'lab.db'}"
        first = dataclasses.replace(events[0], payload={**events[0].payload, "from_study": record})
        open_storage(url).import_study(copy, first.created_at, [first, *events[1:]])
    store.logs.clear()
    said = continuations(store, "dose")
    assert said == ["dose-2", "dose-3", "dose-then", "dose-moved", "dose-moved-2"]
    ids = [store.study_id(n) for n in ("dose", "dose-moved", "dose-moved-2")]
    assert sorted(store.logs) == sorted(ids)
