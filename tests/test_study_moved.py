"""A migrated study is marked as moved at its source (a newcomer's trial: a server left running
on the old SQLite file stored an answer there after `boloop study migrate`, and the two copies
diverged). The mark is a ``moved`` event in the study's own log; a moved study refuses every
write with one line naming where it went, keeps every read, and ``migrate --undo`` undoes a
mistaken migrate. A write racing the migrate waits for it and is refused.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
import sqlalchemy as sa

from boloop.cli import main
from boloop.errors import (
    InvalidInputError,
    StorageError,
    StudyMovedError,
    StudyRemovedError,
)
from boloop.study import create_study, list_studies, load_study, sqlite_log
from boloop.study.storage import open_storage
from boloop.study.storage_migrate import migrate_studies, undo_migration

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def _web(url: str):  # type: ignore[no-untyped-def]
    """The web app over ``url`` in a test client (the test is skipped without the web extra)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    return TestClient(create_app(url, None), follow_redirects=False)


def _study(url: str, name: str = "cake", answers: int = 3):
    s = create_study(name, "toy-random", SPACE, family="levelset", storage=url, seed=3)
    for k in range(answers):
        q = s.ask()
        s.tell(q.id, 0.1 * k, note="first" if k == 0 else None)
    return s


def _log(url: str, name: str = "cake"):
    store = open_storage(url, create=False)
    return store.events(store.study_id(name))


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_server_left_on_the_old_storage_cannot_store_after_the_migrate(tmp_path, capsys):
    """The trial's story: a process holds the study (a running server), the study is migrated,
    the process then sends an answer: refused, with nothing stored, naming where to answer."""
    a, b = f"sqlite:///{tmp_path / 'team.db'}", f"sqlite:///{tmp_path / 'new.db'}"
    held = _study(a, answers=3)
    q = held.ask()  # open on the page when the migrate happens
    code, out, _ = _cli(capsys, "study", "migrate", "--from", a, "--to", b)
    assert code == 0 and "marked as moved" in out
    before = _log(a)
    assert before[-1].kind == "moved" and before[-1].payload["to"] == b
    with pytest.raises(StudyMovedError) as info:
        held.tell(q.id, 0.7)
    text = str(info.value)
    assert f"study 'cake' was moved to {b} on 20" in text and "answer it there" in text
    assert "\n" not in text
    assert isinstance(info.value, StorageError)
    assert _log(a) == before  # nothing stored
    # the answer goes where the study went: the copy has the same open query
    there = load_study("cake", storage=b)
    assert there.ask().id == q.id
    there.tell(q.id, 0.7)
    assert there.n_answered == 4 and load_study("cake", storage=a).n_answered == 3


def test_every_write_is_refused_and_every_read_works_on_a_moved_study(tmp_path, capsys):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=3)
    expert = create_study(
        "labels", "cobol", {"parameters": [{"name": "dose", "low": 0.0, "high": 1.0, "grid": 9}]},
        storage=a, seed=1,
    )  # fmt: skip
    expert.label({"dose": 0.25}, True)
    migrate_studies(a, b)
    before = {n: _log(a, n) for n in ("cake", "labels")}
    s = load_study("cake", storage=a)
    writes = {
        "ask": lambda: s.ask(),
        "tell": lambda: s.tell(3, 0.5),
        "add": lambda: s.add({"temperature": 30.0}, 0.2),
        "undo": lambda: s.undo(),
        "label": lambda: load_study("labels", storage=a).label({"dose": 0.5}, False),
    }
    for what, write in writes.items():  # noqa: B007 - named for the failure's report
        with pytest.raises(StudyMovedError, match=f"was moved to {b}"):
            write()
    assert {n: _log(a, n) for n in ("cake", "labels")} == before
    # the command line: exit 2, the one line, nothing stored
    for argv in (("ask", "cake"), ("tell", "cake", "3", "0.5"), ("undo", "cake")):
        code, _, err = _cli(capsys, "study", *argv, "--storage", a)
        assert code == 2 and f"study 'cake' was moved to {b}" in err, argv
    assert _log(a) == before["cake"]
    # reads go on and say where it went
    st = s.status()
    assert st["moved"]["to"] == b and st["moved"]["events"] == len(before["cake"]) - 1
    assert st["answered"] == 3 and len(s.history()) == 3
    s.export(tmp_path / "cake.csv")
    assert (tmp_path / "cake.csv").read_text().count("\n") == 4
    code, out, _ = _cli(capsys, "study", "status", "cake", "--storage", a)
    assert code == 0 and f"MOVED:          to {b} on" in out
    code, out, _ = _cli(capsys, "study", "list", "--storage", a)
    assert f"moved to {b}" in out
    assert [r["moved_to"] for r in list_studies(a)] == [b, b]
    assert [r["moved_to"] for r in list_studies(b)] == [None, None]
    for url in (a, b):  # the mark is no data: both copies replay to the stored queries
        code, out, _ = _cli(capsys, "study", "verify", "cake", "--storage", url)
        assert code == 0 and "ok: study 'cake'" in out and "3 answers" in out
    assert load_study("cake", storage=b).status()["moved"] is None
    # continuing the old copy would fork the study in the storage it left: refused, nothing made
    with pytest.raises(StudyMovedError, match=f"'cake' was moved to {b} on .* continue it from"):
        create_study("cake-2", from_study="cake", storage=a)
    assert [r["name"] for r in list_studies(a)] == ["cake", "labels"]
    code, _, err = _cli(capsys, "study", "create", "cake-3", "--from", "cake", "--storage", a)
    assert code == 2 and "continue it from there" in err
    create_study("cake-2", from_study="cake", storage=b)  # the live copy continues


def test_migrate_undo_makes_the_source_writable_and_removes_the_copy(tmp_path, capsys):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=3)
    migrate_studies(a, b)
    code, out, _ = _cli(capsys, "study", "migrate", "--undo", "--from", a, "--to", b)
    assert code == 0 and "undid the move of study 'cake'" in out
    assert "cake" not in {n for n, _ in open_storage(b).study_names()}
    assert [e.kind for e in _log(a)][-2:] == ["moved", "move_undone"]
    s = load_study("cake", storage=a)
    assert s.status()["moved"] is None
    q = s.ask()
    s.tell(q.id, 0.9)
    s.undo()  # withdraws an answer given after the marks; and one given before them
    s.undo()
    assert s.n_answered == 2
    code, out, _ = _cli(capsys, "study", "verify", "cake", "--storage", a)
    assert code == 0 and "2 answers in effect" in out
    # migrating again works: the target no longer holds the study
    assert migrate_studies(a, b) == [("cake", len(_log(a)) - 1)]
    assert load_study("cake", storage=b).n_answered == 2


def test_migrate_undo_is_refused_when_the_copy_was_answered(tmp_path):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=2)
    migrate_studies(a, b)
    there = load_study("cake", storage=b)
    there.tell(there.ask().id, 0.4)
    there.undo()  # withdrawn again: still written there, and named
    there.ask()
    before_a, before_b = _log(a), _log(b)
    with pytest.raises(
        InvalidInputError,
        match=r"written to since it was copied \(1 answer, "
        r"1 withdrawal\): removing it would lose that; nothing was removed",
    ):
        undo_migration(a, b)
    assert _log(a) == before_a and _log(b) == before_b
    with pytest.raises(StudyMovedError):
        load_study("cake", storage=a).ask()
    with pytest.raises(InvalidInputError, match="not marked as moved to"):
        undo_migration(a, f"sqlite:///{tmp_path / 'c.db'}", ["cake"])
    assert _log(a) == before_a


def test_migrate_undo_is_allowed_after_the_copys_page_was_opened(tmp_path):
    """Opening the study's page at the target asks a query (an ``asked`` event): a question
    without an answer loses nothing, so the undo goes on and the source takes answers again."""
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=2)
    migrate_studies(a, b)
    there = load_study("cake", storage=b)
    there.ask()  # what the page at the target does
    assert [e.kind for e in _log(b)][-1] == "asked"
    assert undo_migration(a, b) == [("cake", len(_log(a)) - 2)]
    assert "cake" not in {n for n, _ in open_storage(b).study_names()}
    s = load_study("cake", storage=a)
    s.tell(s.ask().id, 0.7)
    assert s.n_answered == 3


@pytest.mark.parametrize(
    "target", ["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))]
)
def test_a_server_on_the_target_after_the_undo_is_refused_and_another_study_is_intact(
    tmp_path, request, target
):
    """The review's case: a process that loaded the copy at the target (a server) outlives
    ``migrate --undo``; a study created at the target afterwards gets an id of its own, and the
    stale object neither reads nor writes it, nor anything else."""
    a = f"sqlite:///{tmp_path / 'a.db'}"
    b = (
        f"sqlite:///{tmp_path / 'b.db'}"
        if target == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    _study(a, answers=2).ask()  # a query open at the migrate
    migrate_studies(a, b)
    server = load_study("cake", storage=b)
    undo_migration(a, b)
    other = create_study(
        "other", "toy-random", {**SPACE, "parameters": [{"name": "pressure", "low": 1.0,
        "high": 5.0}]}, family="levelset", storage=b, seed=1,
    )  # fmt: skip
    for _ in range(3):
        other.tell(other.ask().id, 0.5)
    before = _log(b, "other")
    with pytest.raises(StudyRemovedError, match="study 'cake' is no longer in storage"):
        server.ask()
    with pytest.raises(StudyRemovedError):
        server.tell(2, 0.55, note="measured at b after undo")
    with pytest.raises(StudyRemovedError):
        server.status()
    assert _log(b, "other") == before
    assert load_study("other", storage=b).n_answered == 3
    s = load_study("cake", storage=a)  # the source is the live copy again
    s.tell(s.ask().id, 0.2)
    assert s.n_answered == 3


def test_the_study_list_shows_a_study_it_cannot_read_and_lists_the_others(tmp_path, capsys):
    """A study whose log holds a kind of a newer boloop is a row saying so, in Python, on the
    command line and on the web page's list; the other studies are listed as before."""
    db = tmp_path / "a.db"
    url = f"sqlite:///{db}"
    _study(url, answers=1)
    _study(url, name="bread", answers=2)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO boloop_events (study_id, seq, kind, query_id, payload, created_at) "
            "SELECT study_id, MAX(seq) + 1, 'teleported', NULL, '{}', '2030-01-01T00:00:00Z' "
            "FROM boloop_events WHERE study_id = (SELECT study_id FROM boloop_studies "
            "WHERE name = 'cake')"
        )
    for quick in (True, False):  # Python's sqlite3 and SQLAlchemy
        sqlite_log.ENABLED = quick
        try:
            rows = {r["name"]: r for r in list_studies(url)}
        finally:
            sqlite_log.ENABLED = True
        assert rows["bread"]["answered"] == 2 and rows["bread"]["unreadable"] is None
        assert rows["cake"]["answered"] is None
        assert "kind 'teleported', written by a newer boloop" in rows["cake"]["unreadable"]
    code, out, _ = _cli(capsys, "study", "list", "--storage", url)
    assert code == 0
    lines = dict(line.split("\t", 1) for line in out.splitlines())
    assert lines["cake"].startswith("cannot be read: ") and "teleported" in lines["cake"]
    assert "2 answers" in lines["bread"]
    page = _web(url).get("/")
    assert page.status_code == 200
    assert "cannot be read: " in page.text and "teleported" in page.text
    assert 'href="/studies/bread"' in page.text


def test_a_server_showing_the_copy_answers_404_after_the_undo_and_serves_a_new_study(tmp_path):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=2)
    migrate_studies(a, b)
    client = _web(b)
    assert client.get("/studies/cake").status_code == 200  # the server holds the copy
    undo_migration(a, b)
    _study(b, name="other", answers=1)
    r = client.get("/studies/cake")  # the held copy is found removed, and forgotten
    assert r.status_code == 404 and "is no longer in storage" in r.text
    for path in ("/api/studies/cake", "/api/studies/cake/history"):
        r = client.get(path)
        assert r.status_code == 404
        assert "no study named 'cake'" in r.json()["detail"], path
    r = client.get("/api/studies/other")
    assert r.status_code == 200 and r.json()["answered"] == 1
    # migrated again: the server finds the new copy
    migrate_studies(a, b, ["cake"])
    r = client.get("/api/studies/cake")
    assert r.status_code == 200 and r.json()["answered"] == 2


def test_an_answer_sent_to_a_removed_copy_is_shown_back_and_the_state_says_moved(tmp_path):
    """The second review: a page of the copy open while ``migrate --undo`` removed it sent its
    answer and got a bare 404 (the values gone from the page); and an open page of a moved
    study was told by its poll that its query "can still be stored". Now the 404 page shows
    what was sent, and the page's state names where the study moved."""
    import re

    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _study(a, answers=2)
    migrate_studies(a, b)
    at_a = _web(a)
    state = at_a.get("/studies/cake/state").json()
    assert state["moved"] == b
    client = _web(b)
    page = client.get("/studies/cake")
    assert client.get("/studies/cake/state").json()["moved"] is None  # the live copy
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    q = re.search(r'name="query_id" value="(\d+)"', page.text).group(1)
    undo_migration(a, b)
    r = client.post(
        "/studies/cake/tell",
        data={"csrf": csrf, "query_id": q, "value": "0.61", "note": "batch 7"},
    )
    assert r.status_code == 404 and "is no longer in storage" in r.text
    assert 'id="sent"' in r.text and "0.61" in r.text and "batch 7" in r.text
    assert client.get("/studies/cake/state").status_code == 404  # the poll's cue (app.js)


def test_a_log_kind_of_a_newer_boloop_is_refused_by_name_and_nothing_is_written(
    tmp_path, monkeypatch
):
    """As a newer schema is refused: a study whose log holds a kind this boloop does not know
    (as ``moved`` is to a boloop before this one) is read by no command and written by none."""
    db = tmp_path / "a.db"
    _study(f"sqlite:///{db}", answers=1)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO boloop_events (study_id, seq, kind, query_id, payload, created_at) "
            "SELECT study_id, MAX(seq) + 1, 'teleported', NULL, '{}', '2030-01-01T00:00:00Z' "
            "FROM boloop_events"
        )
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT * FROM boloop_events ORDER BY event_id").fetchall()
    for quick in (True, False):  # Python's sqlite3 (boloop study ask/tell) and SQLAlchemy
        monkeypatch.setattr(sqlite_log, "ENABLED", quick)
        with pytest.raises(StorageError, match=r"kind 'teleported', written by a newer boloop"):
            load_study("cake", storage=f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT * FROM boloop_events ORDER BY event_id").fetchall() == before


# -- PostgreSQL, and the race ----------------------------------------------------------------
@pytest.mark.xdist_group("postgres")
def test_postgresql_source_is_marked_and_refuses_writes_verify_passes_on_both(
    tmp_path, pg_url, capsys
):
    b = f"sqlite:///{tmp_path / 'b.db'}"
    held = _study(pg_url, answers=3)
    q = held.ask()
    code, out, _ = _cli(capsys, "study", "migrate", "--from", pg_url, "--to", b)
    assert code == 0
    before = _log(pg_url)
    assert before[-1].kind == "moved" and before[-1].payload["to"] == b
    with pytest.raises(StudyMovedError, match=f"was moved to {b}"):
        held.tell(q.id, 0.5)
    assert _log(pg_url) == before
    for url in (pg_url, b):
        code, out, _ = _cli(capsys, "study", "verify", "cake", "--storage", url)
        assert code == 0 and "3 answers in effect" in out
    assert load_study("cake", storage=pg_url).status()["moved"]["to"] == b
    # and back: undo the move, the PostgreSQL copy takes answers again
    assert undo_migration(pg_url, b) == [("cake", len(before) - 1)]
    held.tell(q.id, 0.5)
    assert load_study("cake", storage=pg_url).n_answered == 4


def _wait_until(check, what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _sqlite_write_locked(path) -> bool:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


def _race(migrate, stall_started, release, held, qid):
    """Start the migrate (its import stalled at the target), then a tell of the held study while
    the migrate holds the source; release the target. The tell's outcome."""
    result: dict[str, object] = {}

    def run_migrate():
        try:
            result["migrate"] = migrate()
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["migrate"] = exc

    def run_tell():
        try:
            held.tell(qid, 0.66)
            result["tell"] = "stored"
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["tell"] = exc

    m = threading.Thread(target=run_migrate)
    m.start()
    _wait_until(stall_started, "the migrate to hold the source")
    t = threading.Thread(target=run_tell)
    t.start()
    time.sleep(0.5)  # lets the tell reach its wait for the source (the outcome is the same if not)
    assert "tell" not in result  # it waits for the migrate, which waits for the target
    release()
    m.join(60)
    t.join(60)
    return result


@pytest.mark.xdist_group("postgres")
def test_an_answer_racing_a_migrate_from_sqlite_waits_and_is_refused(tmp_path, pg_url):
    path = tmp_path / "team.db"
    a = f"sqlite:///{path}"
    held = _study(a, answers=3)
    qid = held.ask().id
    open_storage(pg_url, create=True)  # the target's tables, then a lock that stalls its import
    engine = sa.create_engine(pg_url)
    conn = engine.connect()
    tx = conn.begin()
    conn.execute(sa.text("LOCK TABLE boloop_studies IN EXCLUSIVE MODE"))

    def release():
        tx.commit()
        conn.close()

    try:
        result = _race(
            lambda: migrate_studies(a, pg_url), lambda: _sqlite_write_locked(path), release,
            held, qid,
        )  # fmt: skip
    finally:
        if conn.in_transaction():
            release()
        engine.dispose()
    assert result["migrate"] == [("cake", 8)]
    assert isinstance(result["tell"], StudyMovedError), result["tell"]
    source, copy = _log(a), _log(pg_url)
    assert source[:-1] == copy and source[-1].kind == "moved"  # the answer is in neither
    assert load_study("cake", storage=pg_url).n_answered == 3


@pytest.mark.xdist_group("postgres")
def test_an_answer_racing_a_migrate_from_postgresql_waits_and_is_refused(tmp_path, pg_url):
    path = tmp_path / "new.db"
    b = f"sqlite:///{path}"
    held = _study(pg_url, answers=3)
    qid = held.ask().id
    open_storage(b, create=True)
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the target's writer: the import waits (busy timeout)

    def holding_the_study_row() -> bool:  # the migrate's FOR UPDATE of the study's row
        engine = sa.create_engine(pg_url)
        try:
            with engine.connect() as c:
                return bool(
                    c.execute(
                        sa.text(
                            "SELECT count(*) FROM pg_locks l JOIN pg_class r ON "
                            "l.relation = r.oid WHERE r.relname = 'boloop_studies' AND "
                            "l.mode = 'RowShareLock' AND l.pid <> pg_backend_pid()"
                        )
                    ).scalar()
                )
        finally:
            engine.dispose()

    def release():
        lock.execute("ROLLBACK")
        lock.close()

    result = _race(lambda: migrate_studies(pg_url, b), holding_the_study_row, release, held, qid)
    assert result["migrate"] == [("cake", 8)]
    assert isinstance(result["tell"], StudyMovedError), result["tell"]
    source, copy = _log(pg_url), _log(b)
    assert source[:-1] == copy and source[-1].kind == "moved"


# -- the study page ----------------------------------------------------------------------------
def test_the_page_of_a_moved_study_shows_where_instead_of_the_form_and_stores_nothing(tmp_path):
    import re

    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    q = _study(a, answers=2).ask()
    client = _web(a)
    page = client.get("/studies/cake")  # a page opened before the migrate, with its form
    assert page.status_code == 200 and 'id="answer-form"' in page.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    migrate_studies(a, b)
    before = _log(a)
    r = client.post(
        "/studies/cake/tell", data={"csrf": csrf, "query_id": str(q.id), "value": "0.4"}
    )
    assert r.status_code == 409 and f"study &#39;cake&#39; was moved to {b}" in r.text
    r = client.post("/studies/cake/undo", data={"csrf": csrf, "last": ""})
    assert r.status_code == 409 and "was moved to" in r.text
    r = client.post("/api/studies/cake/tell", json={"query_id": q.id, "answer": 0.4})
    assert r.status_code == 409 and "was moved to" in r.json()["detail"]
    assert _log(a) == before
    page = client.get("/studies/cake")
    assert page.status_code == 200 and 'id="answer-form"' not in page.text
    assert 'id="moved"' in page.text and f"It was moved to {b} on " in page.text
    undo = re.search(r'<button type="submit" id="btn-undo"[^>]*>', page.text).group(0)
    assert "disabled" in undo and "read-only" in undo  # the copy takes no undo either
    assert client.get("/studies/cake/export.csv").text.count("\n") == 3  # reads go on
    assert client.get("/api/studies/cake").json()["moved"]["to"] == b
