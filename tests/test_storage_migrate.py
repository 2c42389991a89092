"""``boloop study migrate --from URL --to URL [--study NAME]`` (issue 14).

A round trip SQLite -> PostgreSQL -> SQLite keeps every study's log identical (sequence numbers,
kinds, payloads, time stamps), and the copy asks the same next query; studies that exist at the
target are refused, never merged, and nothing is copied then.
"""

from __future__ import annotations

import pytest

from boloop.cli import main
from boloop.errors import InvalidInputError, UnknownIdError
from boloop.study import create_study, list_studies, load_study
from boloop.study.storage import open_storage
from boloop.study.storage_migrate import migrate_studies

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def _fill(url: str) -> dict[str, object]:
    """Two studies: a preference study (MR-LPF) and a level-set one with an undo, a note and a
    measurement added by hand. Returns each study's next query."""
    pref = create_study("duels", "mr-lpf", problem="preference/toy", storage=url, seed=2)
    for k in range(5):
        q = pref.ask()
        pref.tell(q.id, k % 2)
    lev = create_study("coating", "toy-random", SPACE, family="levelset", storage=url, seed=3)
    for k in range(4):
        q = lev.ask()
        lev.tell(q.id, 0.2 * k, note="cloudy" if k == 1 else None)
    lev.undo()
    lev.add({"temperature": 35.0}, 0.61)
    return {"duels": pref.ask().query, "coating": lev.ask().query}


def _logs(url: str) -> dict[str, tuple]:
    store = open_storage(url, create=False)
    return {
        name: (created, store.events(store.study_id(name))) for name, created in store.study_names()
    }


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.xdist_group("postgres")
def test_sqlite_to_postgresql_to_sqlite_keeps_logs_and_next_queries(tmp_path, pg_url, capsys):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    nxt = _fill(a)
    code, out, _ = _cli(capsys, "study", "migrate", "--from", a, "--to", pg_url)
    assert code == 0 and "2 studies copied" in out
    for name, query in nxt.items():  # the copy asks what the source would have asked
        assert load_study(name, storage=pg_url).ask().query == query
        assert load_study(name, storage=pg_url, full_replay=True).ask().query == query
    code, out, _ = _cli(capsys, "study", "migrate", "--from", pg_url, "--to", b)
    assert code == 0 and "copied study 'coating'" in out
    # names, creation times, every event; each source ends with its 'moved' mark
    la, lp, lb = _logs(a), _logs(pg_url), _logs(b)
    assert list(la) == list(lp) == list(lb) == ["duels", "coating"]
    for name in la:
        copied_a = la[name][1][:-1]
        assert la[name][1][-1].kind == "moved" and lp[name][1][-1].kind == "moved"
        assert lp[name][1][: len(copied_a)] == copied_a  # then the next query, asked at pg
        assert lb[name][1] == lp[name][1][:-1]
        assert la[name][0] == lp[name][0] == lb[name][0]
    for name, query in nxt.items():
        assert load_study(name, storage=b).ask().query == query
        assert load_study(name, storage=b, full_replay=True).ask().query == query
    assert [r["answered"] for r in list_studies(pg_url)] == [5, 4]
    moved = load_study("duels", storage=b)  # the copy goes on
    q = moved.ask()
    moved.tell(q.id, "a")
    assert moved.n_answered == 6 and load_study("duels", storage=a).n_answered == 5


def test_a_study_that_exists_at_the_target_is_refused_and_nothing_is_copied(tmp_path, capsys):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(a)
    create_study("coating", "toy-random", SPACE, family="levelset", storage=b, seed=9)
    before = _logs(b)
    code, _, err = _cli(capsys, "study", "migrate", "--from", a, "--to", b)
    assert code == 2 and "already has the studies ['coating']" in err and "never merges" in err
    assert _logs(b) == before
    # the message names what works (boloop has no command to rename or remove a study)
    assert "rename or remove" not in err and "give them: --study duels" in err
    command = f"boloop study create NEW --from coating --from-storage {a} --storage {b}"
    assert command in err
    argv = command.replace("NEW", "coating-copy").split()[1:]
    code, out, _ = _cli(capsys, *argv)
    assert code == 0 and "4 answers in effect carried" in out
    assert load_study("coating-copy", storage=b).n_answered == 4
    # a study of duels cannot be carried under another name: the message says where it can go
    c = f"sqlite:///{tmp_path / 'c.db'}"
    create_study("duels", "mr-lpf", problem="preference/toy", storage=c, seed=7)
    code, _, err = _cli(capsys, "study", "migrate", "--from", a, "--to", c, "--study", "duels")
    assert code == 2 and "'duels' has duels, which cannot be carried" in err
    assert "--from duels" not in err
    command = f"boloop study migrate --from {a} --to OTHER_STORAGE --study duels"
    assert command in err
    d = f"sqlite:///{tmp_path / 'd.db'}"
    code, out, _ = _cli(capsys, *command.replace("OTHER_STORAGE", d).split()[1:])
    assert code == 0 and "1 study copied" in out
    assert _logs(d)["duels"][1] == _logs(a)["duels"][1][:-1]  # all but the source's mark
    # moved: not copied again, from here to anywhere (its answers now go to d)
    code, _, err = _cli(capsys, "study", "migrate", "--from", a, "--to", b, "--study", "duels")
    assert code == 2 and f"study 'duels' was moved to {d}" in err and "nothing was copied" in err
    assert "duels" not in _logs(b)


def test_refused_migrations_write_nothing(tmp_path):
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    with pytest.raises(InvalidInputError, match="holds no studies"):
        migrate_studies(a, b)
    _fill(a)
    with pytest.raises(UnknownIdError, match=r"'nope'.*stored studies: \['duels', 'coating'\]"):
        migrate_studies(a, b, ["duels", "nope"])
    with pytest.raises(InvalidInputError, match="same storage"):
        migrate_studies(a, str(tmp_path / "a.db"))
    assert not (tmp_path / "b.db").exists()
    assert migrate_studies(a, "memory://migrated", ["coating"]) == [("coating", 11)]
    assert _logs("memory://migrated")["coating"][1] == _logs(a)["coating"][1][:-1]
