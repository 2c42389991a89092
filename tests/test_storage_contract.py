"""The storage contract (issue 13 item 5, issue 14): one suite, every backend.

Each test runs on the in-process store (``memory://``), SQLite and a real PostgreSQL server
started by ``tests/conftest.py``; a new backend is added by implementing
:class:`boloop.study.storage.StorageBackend` and adding it to :data:`BACKENDS`. The tests speak
the protocol (:func:`open_storage`) and the study API, never a backend's internals; the schema
checks, which need a database someone else wrote, run on the two SQL backends.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time

import pytest
import sqlalchemy as sa

from boloop.errors import (
    BoloopError,
    InvalidInputError,
    QueryStateError,
    StorageError,
    StudyRemovedError,
    UnknownIdError,
)
from boloop.study import create_study, list_studies, load_study
from boloop.study.storage import (
    SCHEMA_VERSION,
    Event,
    SeqConflict,
    StorageBackend,
    open_storage,
)

PG = pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))
BACKENDS = ["memory", "sqlite", PG]
SQL_BACKENDS = ["sqlite", PG]
_names = itertools.count()


def _url(request: pytest.FixtureRequest, tmp_path) -> str:
    kind = request.param
    if kind == "memory":
        return f"memory://contract-{next(_names)}"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'contract.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path) -> str:
    return _url(request, tmp_path)


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request, tmp_path) -> str:
    return _url(request, tmp_path)


CONFIG = {"method": "toy-random", "family": "levelset", "seed": 0, "note": "ünïcode ✓"}


def _log(store: StorageBackend, name: str) -> list[Event]:
    return store.events(store.study_id(name))


# -- the protocol ---------------------------------------------------------------------------------
def test_reading_an_empty_storage_creates_nothing(url):
    store = open_storage(url, create=False)
    assert isinstance(store, StorageBackend)
    assert store.exists is False and store.study_names() == []
    assert store.created_events(["x"]) == {}
    assert list_studies(url) == []
    with pytest.raises(UnknownIdError, match="no study named 'x'"):
        load_study("x", storage=url)
    assert open_storage(url, create=False).exists is False  # still nothing there


def test_studies_are_created_once_listed_in_order_and_found_by_name(url):
    store = open_storage(url)
    ids = [store.create_study(n, {**CONFIG, "name": n}) for n in ("b", "a", "c")]
    assert len(set(ids)) == 3
    assert [n for n, _ in store.study_names()] == ["b", "a", "c"]
    assert [store.study_id(n) for n in ("b", "a", "c")] == ids
    created = dict(store.study_names())["a"]
    with pytest.raises(InvalidInputError, match="already exists"):
        store.create_study("a", {"other": 1})
    with pytest.raises(UnknownIdError, match=r"stored studies: \['b', 'a', 'c'\]"):
        store.study_id("zz")
    again = open_storage(url, create=False)  # a second opening sees the same
    assert dict(again.study_names())["a"] == created
    (first,) = _log(again, "a")
    assert (first.seq, first.kind, first.query_id) == (0, "created", None)
    assert first.payload == {**CONFIG, "name": "a"}


def test_a_studys_created_event_is_read_alone_at_the_time_the_list_gives(url):
    """``created_events``: the first event of the studies asked for, without their logs, at
    the time ``study_names`` gives the study (the time that names it, ``--from``)."""
    store = open_storage(url)
    sids = {n: store.create_study(n, {**CONFIG, "name": n}) for n in ("b", "a", "c")}
    with store.transaction() as tx:
        tx.append(sids["a"], 1, "asked", 0, {"query": {"kind": "evaluate", "x": [0.5], "id": 0}})
    created = dict(store.study_names())
    first = store.created_events(["a", "zz", "c", "a"])
    assert sorted(first) == ["a", "c"]  # an unknown name is left out, a repeated one read once
    for n in ("a", "c"):
        assert first[n] == store.events(sids[n])[0]
        assert (first[n].seq, first[n].kind) == (0, "created")
        assert first[n].payload == {**CONFIG, "name": n}
        assert first[n].created_at == created[n]
    assert store.created_events([]) == {}
    store.import_study("s0600", created["b"], store.events(sids["b"]))
    many = [f"s{i:04d}" for i in range(1200)]  # more names than one SQLite statement takes
    assert list(store.created_events(many)) == ["s0600"]
    assert store.created_events(many)["s0600"].created_at == created["b"]


def test_events_come_back_exactly_in_order(url):
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    payloads = [
        {"query": {"kind": "evaluate", "x": [0.1, 1e-300, -0.0, 2.5e300], "id": 0}},
        {"answer": 0.30000000000000004, "note": "rejected: too hot — 80 °C"},
        {"answer": {"f": 1.0, "g": -3}, "big": 2**53 + 1, "nested": [[1, 2], {"a": None}]},
        {"answer": True},
    ]
    kinds = ["asked", "told", "added", "told"]
    with store.transaction() as tx:
        assert [e.seq for e in tx.events(sid)] == [0]
        written = [
            tx.append(sid, i + 1, k, 0 if k != "added" else None, p)
            for i, (k, p) in enumerate(zip(kinds, payloads))
        ]
    events = store.events(sid)
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert [e.kind for e in events[1:]] == kinds
    assert [e.payload for e in events[1:]] == payloads
    assert events[1:] == written  # what append returned is what is stored
    assert str(events[1].payload["query"]["x"][2]) == "-0.0"
    assert store.events(sid, after=2) == events[3:]
    assert store.events(sid, after=4) == []
    assert all(e.created_at.endswith("Z") for e in events)


def test_a_failed_transaction_or_a_refused_event_stores_nothing(url):
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    with pytest.raises(RuntimeError, match="boom"):
        with store.transaction() as tx:
            tx.append(sid, 1, "asked", 0, {"query": {}})
            tx.append(sid, 2, "told", 0, {"answer": 1.0})
            raise RuntimeError("boom")
    for kind, payload, error in [
        ("told", {"answer": float("nan")}, InvalidInputError),
        ("told", {"answer": object()}, InvalidInputError),
        ("guessed", {}, InvalidInputError),
    ]:
        with pytest.raises(error):
            with store.transaction() as tx:
                tx.append(sid, 1, "asked", 0, {"query": {}})
                tx.append(sid, 2, kind, 0, payload)
    assert [e.seq for e in store.events(sid)] == [0]
    with store.transaction() as tx:  # and the storage goes on
        tx.append(sid, 1, "asked", 0, {"query": {}})
    assert [e.seq for e in store.events(sid)] == [0, 1]


def test_an_event_at_a_taken_seq_is_a_clear_conflict(url):
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    with store.transaction() as tx:
        tx.append(sid, 1, "asked", 0, {"query": {}})
    with pytest.raises(SeqConflict, match="another process wrote to the study first") as info:
        with store.transaction() as tx:
            tx.append(sid, 1, "told", 0, {"answer": 2.0})
    assert isinstance(info.value, StorageError) and isinstance(info.value, BoloopError)
    assert [(e.seq, e.kind) for e in store.events(sid)] == [(0, "created"), (1, "asked")]


def test_of_two_concurrent_appends_at_one_seq_exactly_one_wins(url):
    """Two writers read the same last event, then append after it in their own transactions
    (threads, each with its own connection): one commits, the other gets SeqConflict."""
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    start = threading.Barrier(2)
    outcome: list[tuple[str, float]] = []

    def writer(answer: float) -> None:
        last = store.events(sid)[-1].seq  # both see seq 0
        start.wait(timeout=30)
        try:
            with store.transaction() as tx:
                tx.append(sid, last + 1, "added", None, {"x": [0.5], "answer": answer})
            outcome.append(("won", answer))
        except SeqConflict:
            outcome.append(("lost", answer))

    threads = [threading.Thread(target=writer, args=(a,)) for a in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(o[0] for o in outcome) == ["lost", "won"], outcome
    (winner,) = [a for o, a in outcome if o == "won"]
    events = store.events(sid)
    assert [e.seq for e in events] == [0, 1] and events[1].payload["answer"] == winner


def test_a_writer_that_waited_sees_what_the_one_before_committed(url):
    """Writers of one study queue: a writing transaction opened while another holds the study
    reads, once it may go on, the event the other committed (so it appends after it instead of
    conflicting)."""
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    appended, b_started = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def first() -> None:
        with store.transaction() as tx:
            tx.events(sid)
            tx.append(sid, 1, "added", None, {"x": [0.1], "answer": 1.0})
            appended.set()
            b_started.wait(30)
            time.sleep(0.2)  # let the second writer reach the lock (the test holds without it)

    def second() -> None:
        appended.wait(30)
        b_started.set()
        with store.transaction() as tx:
            events = tx.events(sid)
            seen.append([e.seq for e in events])
            tx.append(sid, events[-1].seq + 1, "added", None, {"x": [0.2], "answer": 2.0})

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen == [[0, 1]]
    assert [(e.seq, e.payload["answer"]) for e in store.events(sid)[1:]] == [(1, 1.0), (2, 2.0)]


def test_snapshots_are_replaced_and_kept_per_study(url):
    store = open_storage(url)
    a, b = store.create_study("a", CONFIG), store.create_study("b", CONFIG)
    assert store.get_snapshot(a) is None
    store.put_snapshot(a, 3, "f1", b"\x00first\xff")
    store.put_snapshot(a, 5, "f2", b"second")
    assert store.get_snapshot(a) == (5, "f2", b"second")
    assert store.get_snapshot(b) is None
    assert open_storage(url, create=False).get_snapshot(a) == (5, "f2", b"second")


def test_a_log_is_imported_verbatim_once(url, tmp_path):
    store = open_storage(url)
    sid = store.create_study("s", CONFIG)
    with store.transaction() as tx:
        tx.append(sid, 1, "asked", 0, {"query": {"kind": "evaluate", "x": [0.25], "id": 0}})
        tx.append(sid, 2, "told", 0, {"answer": 0.5})
    events = store.events(sid)
    created = dict(store.study_names())["s"]
    new = store.import_study("copy", created, events)
    assert store.events(new) == events
    assert dict(store.study_names())["copy"] == created
    with pytest.raises(InvalidInputError, match="already exists"):
        store.import_study("copy", created, events)
    with pytest.raises(InvalidInputError, match="seq"):
        store.import_study("gap", created, [events[0], events[2]])
    with pytest.raises(InvalidInputError, match="created"):
        store.import_study("headless", created, events[1:])
    with pytest.raises(InvalidInputError, match="the study's time is that of its 'created'"):
        store.import_study("late", "2030-01-01T00:00:00.000000Z", events)  # names no study
    assert [n for n, _ in store.study_names()] == ["s", "copy"]


def test_a_copied_study_is_dropped_only_as_it_was_copied(url):
    """``drop_study`` (``migrate --undo``): the study, its log and snapshot go in one
    transaction, only if nothing but questions was written after the event given (an opened
    page asks one); what was written is named; other studies are untouched."""
    store = open_storage(url)
    keep = store.create_study("keep", CONFIG)
    sid = store.create_study("copy", CONFIG)
    with store.transaction() as tx:
        tx.append(sid, 1, "asked", 0, {"query": {"kind": "evaluate", "x": [0.25], "id": 0}})
        tx.append(sid, 2, "told", 0, {"answer": 0.5})
        tx.append(sid, 3, "withdrawn", 0, {"query_id": 0})
        tx.append(sid, 4, "asked", 1, {"query": {"kind": "evaluate", "x": [0.5], "id": 1}})
    store.put_snapshot(sid, 1, "f", b"data")
    with pytest.raises(
        InvalidInputError, match=r"written to since it was copied \(1 answer, 1 withdrawal\)"
    ):
        store.drop_study("copy", 1)
    with pytest.raises(InvalidInputError, match="fewer than the 6"):
        store.drop_study("copy", 5)
    assert len(_log(store, "copy")) == 5
    store.drop_study("copy", 3)  # the question asked after it loses nothing
    assert [n for n, _ in store.study_names()] == ["keep"]
    with pytest.raises(UnknownIdError):
        store.study_id("copy")
    assert _log(store, "keep")[0].payload == CONFIG and store.study_id("keep") == keep
    again = store.create_study("copy", CONFIG)  # the name is free again, and empty
    assert [e.kind for e in store.events(again)] == ["created"]
    assert store.get_snapshot(again) is None


def test_a_removed_studys_id_is_never_given_to_another_study(url):
    """A process may still hold a removed study by its id: no later study gets that id (SQLite
    would hand out the highest id plus one again), also after the storage is opened anew; the
    transaction names the study of an id, None for a removed one."""
    store = open_storage(url)
    first = store.create_study("first", CONFIG)
    gone = store.create_study("gone", CONFIG)
    with store.transaction(write=False) as tx:
        assert tx.study(gone) == ("gone", store.events(gone)[0].created_at)
        assert tx.study(gone) == ("gone", dict(store.study_names())["gone"])
    store.drop_study("gone", 0)
    with store.transaction(write=False) as tx:
        assert tx.study(gone) is None and tx.study(first)[0] == "first"
    new = store.create_study("new", CONFIG)
    assert new not in (first, gone)
    store.drop_study("new", 0)
    later = open_storage(url).create_study("later", CONFIG)  # opened anew: no id comes back
    assert later not in (first, gone, new)
    with store.transaction() as tx:
        assert tx.study(later) == ("later", store.events(later)[0].created_at)


# -- through the study API ----------------------------------------------------------------------
SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def test_a_study_resumes_with_the_same_next_query(url):
    study = create_study("s", "toy-random", SPACE, family="levelset", storage=url, seed=4)
    for k in range(6):
        q = study.ask()
        study.tell(q.id, 0.1 * k, note="by hand" if k == 2 else None)
    study.undo()
    nxt = study.ask()
    again = load_study("s", storage=url)
    assert again.ask().query == nxt.query
    assert again.history() == study.history()
    full = load_study("s", storage=url, full_replay=True)
    assert full.ask().query == nxt.query
    (row,) = list_studies(url)
    assert (row["name"], row["answered"], row["open_query"]) == ("s", 5, nxt.id)


def test_a_study_held_after_its_removal_refuses_and_touches_no_other_study(url):
    """A process that holds a study ``migrate --undo`` removed (a server on the target) is
    refused every read and write with a clear error, while a study created after it is read and
    written as before (its log is never the removed one's)."""
    held = create_study("cake", "toy-random", SPACE, family="levelset", storage=url, seed=3)
    held.tell(held.ask().id, 0.1)
    q = held.ask()  # open when the study is removed
    store = open_storage(url)
    store.drop_study("cake", len(_log(store, "cake")) - 1)
    other = create_study("other", "toy-random", SPACE, family="levelset", storage=url, seed=1)
    for _ in range(3):
        other.tell(other.ask().id, 0.5)
    before = _log(store, "other")
    for act in (held.ask, held.refresh, lambda: held.tell(q.id, 0.3), held.undo):
        with pytest.raises(
            StudyRemovedError,
            match=r"study 'cake' is no longer in storage .*"
            r"migrate --undo.*Nothing was stored",
        ):
            act()
    assert _log(store, "other") == before
    assert load_study("other", storage=url).n_answered == 3
    with pytest.raises(UnknownIdError, match="no study named 'cake'"):
        load_study("cake", storage=url)


def test_two_processes_views_telling_one_query_one_wins(url):
    a = create_study("race", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    b = load_study("race", storage=url)
    q = a.ask()
    assert b.ask().query == q.query
    a.tell(q.id, 1.0)
    with pytest.raises(QueryStateError, match="already answered"):
        b.tell(q.id, 2.0)
    told = [e for e in b.events() if e["kind"] == "told"]
    assert [e["payload"]["answer"] for e in told] == [1.0]
    assert b.ask().id == a.ask().id == q.id + 1


# -- the SQL backends: someone else's database ------------------------------------------------------
def _execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for s in statements:
                conn.exec_driver_sql(s)
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_newer_schema_is_refused_and_not_written(sql_url):
    create_study("v", "toy-random", SPACE, family="levelset", storage=sql_url, seed=0)
    _execute(
        sql_url,
        f"UPDATE boloop_meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'",
    )
    for action in (
        lambda: load_study("v", storage=sql_url),
        lambda: create_study("w", "toy-random", SPACE, family="levelset", storage=sql_url),
        lambda: list_studies(sql_url),
    ):
        with pytest.raises(StorageError, match=f"schema version {SCHEMA_VERSION + 1}"):
            action()
    _execute(
        sql_url, f"UPDATE boloop_meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version'"
    )
    assert [r["name"] for r in list_studies(sql_url)] == ["v"]


def test_a_foreign_database_is_refused_and_not_written(sql_url):
    _execute(sql_url, "CREATE TABLE trials (id INTEGER PRIMARY KEY, value REAL)")
    with pytest.raises(StorageError, match="not a boloop database"):
        create_study("s", "toy-random", SPACE, family="levelset", storage=sql_url)
    with pytest.raises(StorageError, match="not a boloop database"):
        list_studies(sql_url)
    assert _tables(sql_url) == {"trials"}


def test_a_missing_driver_names_the_extra(monkeypatch, capsys):
    """Without psycopg a PostgreSQL URL is one line naming ``boloop[postgres]`` (no server
    needed: the driver is looked for before any connection)."""
    from boloop.cli import main

    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    url = f"postgresql://lab:s3cret@127.0.0.1:1/nodriver{next(_names)}"
    with pytest.raises(StorageError, match=r"pip install 'boloop\[postgres\]'") as info:
        list_studies(url)
    assert "s3cret" not in str(info.value)
    assert main(["study", "list", "--storage", url.replace("nodriver", "cli")]) == 2
    err = capsys.readouterr().err
    assert "boloop[postgres]" in err and "Traceback" not in err and "s3cret" not in err


def test_an_unsupported_backend_is_refused_naming_the_supported_ones(tmp_path):
    with pytest.raises(InvalidInputError, match=r"'mysql' backend is not supported.*postgresql"):
        list_studies("mysql://u:p@localhost/lab")


# -- the list of studies: counted by the storage, as reading every log gives it ----------------
def _listing_counted_and_read(url: str, monkeypatch) -> tuple[list[dict], list[dict]]:
    """``list_studies(url)`` as it is (the storage counts the logs, :meth:`log_summaries`), and
    as it is when the storage cannot count (``log_summaries`` None: every log is read)."""
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import Storage
    from boloop.study.storage_memory import MemoryStorage

    counted = list_studies(url)
    with monkeypatch.context() as m:
        for backend in (SQLiteLog, Storage, MemoryStorage):
            m.setattr(backend, "log_summaries", lambda self: None)
        read = list_studies(url)
    return counted, read


def _listings(url: str, monkeypatch) -> list[tuple[list[dict], list[dict]]]:
    """:func:`_listing_counted_and_read` through each way this boloop opens ``url``: a plain
    SQLite file both through Python's sqlite3 (the quick path) and through SQLAlchemy."""
    from boloop.study import sqlite_log

    if not url.startswith("sqlite"):
        return [_listing_counted_and_read(url, monkeypatch)]
    out = []
    for quick in (True, False):
        monkeypatch.setattr(sqlite_log, "ENABLED", quick)
        out.append(_listing_counted_and_read(url, monkeypatch))
    return out


def _answered_study(url: str, name: str, answers: int, seed: int = 3):
    study = create_study(name, "toy-random", SPACE, family="levelset", storage=url, seed=seed)
    for k in range(answers):
        study.tell(study.ask().id, 0.1 * k, note="first" if k == 0 else None)
    return study


def test_log_summaries_count_what_the_logs_hold(url):
    """The protocol's counts of a log (what the list of studies reads): its events, of each
    kind, the time of its last one and the query asked and not answered; a study without events
    is left out."""
    store = open_storage(url)
    study = _answered_study(url, "s", 3)
    q = study.ask()
    _answered_study(url, "t", 0)
    summaries = store.log_summaries()
    assert summaries is not None and set(summaries) == {"s", "t"}
    log = _log(store, "s")
    s = summaries["s"]
    assert (s.events, s.first_seq, s.last_seq) == (len(log), 0, len(log) - 1)
    assert s.kinds == {"created": 1, "asked": 4, "told": 3} and s.foreign == 0
    assert s.last_at == log[-1].created_at and s.open_query == q.id
    assert s.no_query == 0 and s.odd_payloads == 0 and s.complete()
    t = summaries["t"]
    assert t.kinds == {"created": 1} and t.open_query is None and t.complete()


def test_the_list_of_studies_counted_is_what_reading_every_log_gives(url, tmp_path, monkeypatch):
    """list_studies takes its counts from the storage (log_summaries) and reads a log only where
    they cannot say all: on studies plain, with a question open, with undos (the withdrawn query
    open again, and a study that went on after two undos), continued (as this boloop records it,
    as an earlier boloop did by the storage's URL text, and by another storage's text, linked by
    its first carried answer), migrated away and migrated back, every field is what reading every
    log gives."""
    import dataclasses

    from boloop.study.log import now_iso
    from boloop.study.storage_migrate import migrate_studies, undo_migration

    _answered_study(url, "plain", 4)
    q_open = _answered_study(url, "open", 3).ask().id
    undone = _answered_study(url, "undone", 4)
    undone.undo()
    withdrawn = undone.ask().id
    twice = _answered_study(url, "twice", 5)
    twice.undo()
    twice.undo()
    twice.tell(twice.ask().id, 0.9)
    create_study("plain-2", from_study="plain", storage=url)
    store = open_storage(url)
    new = _log(store, "plain-2")
    record = {k: v for k, v in new[0].payload["from_study"].items() if k != "created_at"}
    for name, rec in (
        ("plain-then", record),
        ("plain-elsewhere", {**record, "storage": "sqlite:////elsewhere/lab.db"}),
    ):
        created = now_iso()
        head = dataclasses.replace(
            new[0], payload={**new[0].payload, "from_study": rec}, created_at=created
        )
        store.import_study(name, created, [head, *new[1:]])
    _answered_study(url, "away", 2)
    _answered_study(url, "back", 2)
    there = f"sqlite:///{tmp_path / 'there.db'}"
    migrate_studies(url, there, ["away", "back"])
    undo_migration(url, there, ["back"])
    for counted, read in _listings(url, monkeypatch):
        assert counted == read
        rows = {r["name"]: r for r in counted}
        assert len(rows) == 9 and not any(r["unreadable"] for r in counted)
        said = {n: (r["answered"], r["open_query"]) for n, r in rows.items()}
        assert said["plain"] == (4, None) and said["open"] == (3, q_open)
        assert said["undone"] == (3, withdrawn) and said["twice"] == (4, None)
        assert rows["plain"]["continued_as"] == ["plain-2", "plain-then", "plain-elsewhere"]
        assert rows["away"]["moved_to"] == there and rows["back"]["moved_to"] is None
        assert rows["plain"]["method"] == "toy-random" and rows["plain"]["family"] == "levelset"
        assert rows["undone"]["last_activity"] == _log(store, "undone")[-1].created_at


def test_the_list_of_studies_counted_lists_unreadable_logs_as_reading_them_does(
    sql_url, monkeypatch
):
    """Logs someone else wrote to: a kind of a newer boloop, a payload that is no JSON, one that
    is no object, a NaN (which Python reads and the databases' JSON does not), a missing event,
    a question without a query id, a corrupt first event, a study without events, a NUL
    after a payload (SQLite): every row, readable or not and why, is what reading every log
    gives, and one of them cannot spoil the others' counts."""
    names = ["kind", "json", "array", "nan", "gap", "noquery", "first", "nul", "fine"]
    for name in names:
        _answered_study(sql_url, name, 3)

    def sid(name: str) -> str:
        return f"(SELECT study_id FROM boloop_studies WHERE name = '{name}')"

    changes = [
        "INSERT INTO boloop_events (study_id, seq, kind, query_id, payload, created_at) "
        "SELECT study_id, MAX(seq) + 1, 'teleported', NULL, '{}', '2030-01-01T00:00:00Z' "
        f"FROM boloop_events WHERE study_id = {sid('kind')} GROUP BY study_id",
        f"UPDATE boloop_events SET payload = '{{\"a\": ' WHERE study_id = {sid('json')} AND seq = 3",
        f"UPDATE boloop_events SET payload = '[1]' WHERE study_id = {sid('array')} AND seq = 2",
        f"UPDATE boloop_events SET payload = '{{\"answer\": NaN}}' WHERE study_id = {sid('nan')} "
        "AND seq = 2",
        f"DELETE FROM boloop_events WHERE study_id = {sid('gap')} AND seq = 2",
        f"UPDATE boloop_events SET query_id = NULL WHERE study_id = {sid('noquery')} AND seq = 3",
        f"UPDATE boloop_events SET payload = 'oops' WHERE study_id = {sid('first')} AND seq = 0",
        "INSERT INTO boloop_studies (name, created_at) VALUES ('none', '2026-01-01T00:00:00Z')",
    ]
    if sql_url.startswith("sqlite"):
        changes.append(
            "UPDATE boloop_events SET payload = payload || char(0) || 'x' "
            f"WHERE study_id = {sid('nul')} AND seq = 2"
        )
    _execute(sql_url, *changes)
    for counted, read in _listings(sql_url, monkeypatch):
        assert counted == read
        rows = {r["name"]: r for r in counted}
        unreadable = {n for n, r in rows.items() if r["unreadable"]}
        nul = {"nul"} if sql_url.startswith("sqlite") else set()
        assert unreadable == {"kind", "json", "array", "gap", "first"} | nul
        assert "newer boloop" in rows["kind"]["unreadable"]
        assert rows["nan"]["answered"] == 3 and rows["noquery"]["answered"] == 3
        assert rows["fine"]["answered"] == 3 and rows["none"]["answered"] == 0
