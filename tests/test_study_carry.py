"""Issue 15, "nothing lost": a study whose log no longer replays (a method that proposes
differently from the one that wrote it) refuses to load with a message naming the way forward,
``boloop study create NEW --from OLD``, which continues it with every answer in effect as the new
study's own data. The CLI items run ``boloop`` in a real subprocess; refusals use the in-process
runner (tests/cli_runner.py)."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boloop.errors import InvalidInputError, StorageError, UnknownIdError
from boloop.study import create_study, load_study
from cli_runner import assert_refused, run_cli

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _answer(q, i: int):
    """A plausible answer to query ``q`` (the i-th): labels alternate, values vary with i."""
    if q.kind == "label":
        return i % 3 != 1
    if q.kind == "compare":
        return i % 2
    if q.outputs:  # safe family: f and a small, safe g
        return {"f": 0.1 * i, "g": 0.01 * i}
    return round(0.05 * i + 0.1 * sum(q.params.values()), 6)


def _answered_study(url: str, name: str, method: str, problem: str, n: int, **options):
    study = create_study(name, method, problem=problem, storage=url, seed=3, **options)
    for i in range(n):
        q = study.ask()
        study.tell(q.id, _answer(q, i))
    return study


def _events(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT study_id, seq, kind, query_id, payload FROM boloop_events ORDER BY event_id"
        ).fetchall()


def _study_names(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT name FROM boloop_studies ORDER BY study_id")]


def _break_replay(db: Path, name: str, version: str | None = None) -> list[float]:
    """Make the study's log no longer replay, as a method that proposes differently would: move
    the point of its first stored query (and drop its snapshot, which another boloop's code would
    not use). ``version``: also pretend the study was created by that boloop version. Returns the
    stored point of that query as it now is."""
    con = sqlite3.connect(db)
    try:
        (sid,) = con.execute("SELECT study_id FROM boloop_studies WHERE name=?", (name,)).fetchone()
        eid, text = con.execute(
            "SELECT event_id, payload FROM boloop_events WHERE study_id=? AND kind='asked' "
            "ORDER BY seq LIMIT 1",
            (sid,),
        ).fetchone()
        payload = json.loads(text)
        x = payload["query"]["x"]
        x[0] = 0.25 if abs(x[0] - 0.25) > 0.05 else 0.75
        con.execute(
            "UPDATE boloop_events SET payload=? WHERE event_id=?", (json.dumps(payload), eid)
        )
        if version is not None:
            cid, ctext = con.execute(
                "SELECT event_id, payload FROM boloop_events WHERE study_id=? AND seq=0", (sid,)
            ).fetchone()
            config = json.loads(ctext)
            config["boloop_version"] = version
            con.execute(
                "UPDATE boloop_events SET payload=? WHERE event_id=?", (json.dumps(config), cid)
            )
        con.execute("DELETE FROM boloop_snapshots WHERE study_id=?", (sid,))
        con.commit()
    finally:
        con.close()
    return x


def _stored_answers(db: Path, name: str) -> list[tuple]:
    """(kind, point, answer) of the answers in effect, read from the raw log (no withdrawals in
    the studies that use it)."""
    with sqlite3.connect(db) as con:
        (sid,) = con.execute("SELECT study_id FROM boloop_studies WHERE name=?", (name,)).fetchone()
        rows = con.execute(
            "SELECT kind, query_id, payload FROM boloop_events WHERE study_id=? ORDER BY seq",
            (sid,),
        ).fetchall()
    asked, out = {}, []
    for kind, qid, text in rows:
        p = json.loads(text)
        assert kind != "withdrawn"
        if kind == "asked":
            asked[qid] = p["query"]
        elif kind == "told":
            out.append((asked[qid]["kind"], asked[qid]["x"], p["answer"]))
        elif kind == "added":
            out.append(("label" if p.get("label") else "evaluate", p["x"], p["answer"]))
    return out


def _subprocess(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "BOLOOP_STORAGE": f"sqlite:///{cwd / 'lab.db'}",
    }
    return subprocess.run(
        [sys.executable, "-m", "boloop.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# -- the message and the way forward, through the real command line ----------------------------
def test_a_study_that_no_longer_replays_is_continued_with_every_answer(tmp_path):
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    old = _answered_study(url, "process", "cobol", "expert/toy", 8, n_initial_labels=3, n_initial=2)
    old.add({"x0": 0.3, "x1": 0.6}, 0.42)
    old.label({"x0": 0.7, "x1": 0.1}, False)
    x = old.ask().params  # an open query: not an answer, not carried
    moved = _break_replay(db, "process")
    stored = _stored_answers(db, "process")
    kinds = [k for k, _, _ in stored]
    assert "label" in kinds and "evaluate" in kinds and x is not None
    before = _events(db)

    for command in ("ask", "verify", "status"):
        res = _subprocess(tmp_path, "study", command, "process")
        line = assert_refused(res, "study 'process'", "different query", "proposes differently")
        assert "a development version, or changed defaults" in line  # same version number
        assert f"all {len(stored)} stored answers kept" in line
        assert line.rstrip().endswith("boloop study create process-continued --from process")
    suggested = shlex.split(line.rsplit(": ", 1)[1])
    assert suggested[:2] == ["boloop", "study"]

    res = _subprocess(tmp_path, *suggested[1:])  # the command the message gives, as given
    assert res.returncode == 0, res.stderr
    assert f"{len(stored)} answers in effect carried" in res.stdout
    assert _events(db)[: len(before)] == before  # the old study's log is untouched
    assert _study_names(db) == ["process", "process-continued"]

    res = _subprocess(tmp_path, "study", "status", "process-continued", "--json")
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert st["method"] == "cobol" and st["seed"] == 3
    assert st["options"] == {"n_initial_labels": 3, "n_initial": 2}
    assert st["answered"] == len(stored)
    assert st["counts"]["labels"] == kinds.count("label")
    assert st["counts"]["evaluations"] == kinds.count("evaluate")
    assert st["counts"]["added"] == len(stored)
    res = _subprocess(tmp_path, "study", "ask", "process-continued", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["id"] == 0  # the new study's own first query

    new = load_study("process-continued", storage=url)
    assert new.config["from_study"]["study"] == "process"
    assert new.config["from_study"]["answers"] == len(stored)
    hist = new.history()
    assert [(r["kind"], list(r["params"].values()), r["answer"]) for r in hist] == stored
    assert list(hist[0]["params"].values()) == moved  # what was stored is what is carried
    assert all(r["source"] == "added" and "from study 'process'" in r["note"] for r in hist)
    assert "query 0" in hist[0]["note"]


def test_another_version_is_named_with_the_way_forward(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _answered_study(url, "s", "randomized-straddle", "levelset/toy", 3)
    _break_replay(tmp_path / "lab.db", "s", version="0.0.1")
    with pytest.raises(StorageError) as info:
        load_study("s", storage=url)
    msg = str(info.value)
    assert "created with boloop '0.0.1'; this is boloop" in msg
    assert "Load it with the boloop version that created it" in msg
    assert f"boloop study create s-continued --from s --storage {url}" in msg


def test_the_suggested_name_is_free(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _answered_study(url, "s", "randomized-straddle", "levelset/toy", 2)
    create_study("s-continued", "randomized-straddle", problem="levelset/toy", storage=url)
    _break_replay(tmp_path / "lab.db", "s")
    with pytest.raises(StorageError, match="create s-continued-2 --from s"):
        load_study("s", storage=url)


# -- refusals: exit 2, nothing stored ----------------------------------------------------------
def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return run_cli(
        argv, cwd=cwd, env={**os.environ, "BOLOOP_STORAGE": f"sqlite:///{cwd / 'lab.db'}"}
    )


def test_refusals_store_nothing(tmp_path):
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered_study(url, "old", "randomized-straddle", "levelset/toy", 3)
    create_study("taken", "randomized-straddle", problem="levelset/toy", storage=url, seed=0)
    before = _events(db)
    assert_refused(
        _cli(tmp_path, "study", "create", "new", "--from", "nope"), "no study named 'nope'"
    )
    assert_refused(
        _cli(tmp_path, "study", "create", "taken", "--from", "old"), "'taken' already exists"
    )
    assert_refused(_cli(tmp_path, "study", "create", "old", "--from", "old"), "name of its own")
    assert_refused(_cli(tmp_path, "study", "create", "new"), "--space", "--problem", "--from")
    assert_refused(_cli(tmp_path, "study", "create", "new", "--from-storage", url), "give --from")
    # a space whose bounds leave out the old points: refused at the answer, nothing half-made
    space = tmp_path / "narrow.json"
    space.write_text(
        json.dumps(
            {
                "threshold": 0.0,
                "parameters": [{"name": "x0", "low": 5.0, "high": 6.0, "grid": 5}],
            }
        )
    )
    res = _cli(tmp_path, "study", "create", "new", "--from", "old", "--space", str(space))
    assert_refused(
        res, "study 'old' cannot be continued as 'new'", "answer 1 of 3", "Nothing was stored"
    )
    assert _events(db) == before
    assert _study_names(db) == ["old", "taken"]


def test_duels_have_no_outside_path_and_areassert_refused(tmp_path):
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered_study(url, "cake", "mr-lpf", "preference/toy", 2, horizon=20)
    before = _events(db)
    res = _cli(tmp_path, "study", "create", "cake2", "--from", "cake")
    line = assert_refused(res, "2 of its answers are duels", "no way to record a duel")
    # the study loads: the refusal says so and names what works, not a broken study's advice
    assert "study itself is fine" in line and "boloop study ask cake" in line
    assert f"boloop study migrate --from {url} --to OTHER_STORAGE --study cake" in line
    assert "created it" not in line and "development version" not in line
    assert _events(db) == before and _study_names(db) == ["cake"]
    assert load_study("cake", storage=url).n_answered == 2  # the ways it names work
    other = f"sqlite:///{tmp_path / 'other.db'}"
    res = _cli(tmp_path, "study", "migrate", "--from", url, "--to", other, "--study", "cake")
    assert res.returncode == 0 and load_study("cake", storage=other).n_answered == 2
    # a preference study without answers loses nothing: it can be continued
    create_study("empty", "mr-lpf", problem="preference/toy", storage=url, seed=1, horizon=20)
    res = _cli(tmp_path, "study", "create", "empty2", "--from", "empty")
    assert res.returncode == 0, res.stderr
    assert load_study("empty2", storage=url).n_answered == 0


# -- the API ------------------------------------------------------------------------------------
def test_api_carries_the_answers_in_effect_of_the_level_set_family(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    other = f"sqlite:///{tmp_path / 'b.db'}"
    old = _answered_study(url, "old", "randomized-straddle", "levelset/toy", 5)
    withdrawn = old.undo()  # withdrawn: not carried; its query is open again
    old.tell(withdrawn["query_id"], 0.987)
    old.add({"x0": 0.5}, 0.3)
    effective = [(r["kind"], r["params"], r["answer"]) for r in old.history()]
    assert len(effective) == 6 and withdrawn["answer"] not in [a for _, _, a in effective]
    # continued in another storage, with another seed
    new = create_study("new", from_study="old", from_storage=url, storage=other, seed=11)
    assert (new.method, new.seed, new.storage_url) == ("randomized-straddle", 11, other)
    assert [(r["kind"], r["params"], r["answer"]) for r in new.history()] == effective
    assert new.status()["counts"]["evaluations"] == 6
    q = new.ask()
    new.tell(q.id, 0.1)
    assert load_study("new", storage=other).n_answered == 7
    with pytest.raises(InvalidInputError, match="already exists"):
        create_study("new", from_study="old", from_storage=url, storage=other)
    with pytest.raises(UnknownIdError):
        create_study("other", from_study="missing", storage=url)
    with pytest.raises(InvalidInputError, match="load_if_exists"):
        create_study("x", from_study="old", storage=url, load_if_exists=True)


def test_api_carries_safe_measurements_and_merges_options(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    old = _answered_study(url, "trial", "m-safeopt", "safe/toy", 3, fit_hyperparameters=False)
    stored = [(r["params"], r["answer"]) for r in old.history()]
    new = create_study("trial2", from_study="trial", storage=url, sqrt_beta_f=2.0)
    assert new.options == {"fit_hyperparameters": False, "sqrt_beta_f": 2.0}
    assert [(r["params"], r["answer"]) for r in new.history()] == stored
    assert new.ask().kind == "evaluate"


# -- review fixes: every printed way forward works -------------------------------------------
def _edit_created(db: Path, name: str, edit) -> None:  # noqa: ANN001
    """Apply ``edit`` to the stored configuration (the ``created`` event) of study ``name``."""
    with sqlite3.connect(db) as con:
        (sid,) = con.execute("SELECT study_id FROM boloop_studies WHERE name=?", (name,)).fetchone()
        eid, text = con.execute(
            "SELECT event_id, payload FROM boloop_events WHERE study_id=? AND seq=0", (sid,)
        ).fetchone()
        config = json.loads(text)
        edit(config)
        con.execute(
            "UPDATE boloop_events SET payload=? WHERE event_id=?", (json.dumps(config), eid)
        )
        con.execute("DELETE FROM boloop_snapshots WHERE study_id=?", (sid,))


def test_a_study_of_duels_that_no_longer_replays_is_not_offered_a_dead_end(tmp_path):
    """Duels cannot be carried, so the message must not offer --from: it says that the answers
    are safe and which boloop loads them."""
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered_study(url, "cake", "eubo-regret", "preference/toy", 3)
    with sqlite3.connect(db) as con:  # swap the first duel's options: the log no longer replays
        eid, text = con.execute(
            "SELECT event_id, payload FROM boloop_events WHERE kind='asked' ORDER BY seq LIMIT 1"
        ).fetchone()
        payload = json.loads(text)
        q = payload["query"]
        for one, other in (("a", "b"), ("i", "j"), ("index_a", "index_b")):
            if one in q and other in q:
                q[one], q[other] = q[other], q[one]
        con.execute(
            "UPDATE boloop_events SET payload=? WHERE event_id=?", (json.dumps(payload), eid)
        )
        con.execute("DELETE FROM boloop_snapshots")
    line = assert_refused(_subprocess(tmp_path, "study", "verify", "cake"), "different query")
    assert "--from cake" not in line and "-continued" not in line
    assert "its 3 stored answers are safe in the storage" in line and "3 of them duels" in line
    assert "load it with the boloop code that created it" in line.lower()
    # and --from, tried anyway, says the same in its own words
    line = assert_refused(_cli(tmp_path, "study", "create", "cake2", "--from", "cake"), "duels")
    assert "boloop code that created it" in line and "safe in the storage" in line


def test_a_given_method_leaves_the_old_options_behind(tmp_path):
    """An option the old study stored that this boloop no longer knows: without --method the
    refusal names where it came from and the way out; with --method the study is continued."""
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered_study(url, "s", "randomized-straddle", "levelset/toy", 3)
    _edit_created(db, "s", lambda c: c["options"].update(sobol_candidates=True))
    before = _events(db)
    line = assert_refused(_cli(tmp_path, "study", "create", "t", "--from", "s"), "sobol_candidates")
    assert "come from study 's'" in line and "--method randomized-straddle" in line
    assert _events(db) == before
    res = _cli(tmp_path, "study", "create", "t", "--from", "s", "--method", "randomized-straddle")
    assert res.returncode == 0, res.stderr
    new = load_study("t", storage=url)
    assert new.options == {} and new.n_answered == 3


def test_a_space_this_version_cannot_rebuild_is_replaced_by_the_one_given(tmp_path):
    db = tmp_path / "lab.db"
    url = f"sqlite:///{db}"
    _answered_study(url, "s", "randomized-straddle", "levelset/toy", 3)
    _edit_created(db, "s", lambda c: c.update(problem="levelset/toy-v0"))
    assert_refused(
        _cli(tmp_path, "study", "create", "t", "--from", "s"), "cannot be rebuilt", "--problem"
    )
    res = _cli(tmp_path, "study", "create", "t", "--from", "s", "--problem", "levelset/toy")
    assert res.returncode == 0, res.stderr
    assert load_study("t", storage=url).n_answered == 3
    # a space of another dimension cannot take the points
    res = _cli(tmp_path, "study", "create", "u", "--from", "s", "--problem", "levelset/sinusoidal")
    assert_refused(res, "1 parameters", "2")


def test_the_printed_next_steps_name_the_storage_and_the_old_answer_times(tmp_path):
    other = tmp_path / "elsewhere.db"
    url = f"sqlite:///{other}"
    old = _answered_study(url, "s", "randomized-straddle", "levelset/toy", 2)
    told_at = [r["told_at"] for r in old.history()]
    old.add({"x0": 0.5}, 0.3, note="n" * 1990 + "END")  # too long once the origin is prefixed
    res = _cli(tmp_path, "study", "create", "t", "--from", "s", "--storage", url)
    assert res.returncode == 0, res.stderr
    assert f"Next: boloop study ask t --storage {url}" in res.stdout
    hist = load_study("t", storage=url).history()
    for row, when in zip(hist, told_at):
        assert f"given {when.isoformat() if hasattr(when, 'isoformat') else when}" in row["note"]
    assert hist[-1]["note"].endswith("[cut]") and "END" not in hist[-1]["note"]
    # the old study in another storage than --storage: the refusal says how to name it
    line = assert_refused(
        _cli(tmp_path, "study", "create", "t2", "--from", "s"), "no study named 's'"
    )
    assert "--from-storage" in line


def test_a_continued_safe_study_does_not_measure_its_carried_seeds_again():
    """The answers a continuation carries include the safe seeds at the lowest level: the new
    study does not ask them again (a newcomer's trial: its continuation re-measured five dose-0
    settings it had); a study pinned from before the option (skip_measured_seeds=False) does."""
    from study_samples import SMALL_DOSE

    def g_of(p):
        return 0.1 + 0.05 * p["dose"] * (1.0 + 0.5 * p["t"])

    for skip in (True, False):
        url = f"memory://carry-seeds-{skip}"
        old = create_study("old", "m-safeopt", SMALL_DOSE, storage=url, seed=0)
        measured = set()
        for _ in range(6):
            q = old.ask()
            old.tell(q.id, {"f": q.params["dose"], "g": g_of(q.params)})
            measured.add((q.params["dose"], q.params["t"]))
        new = create_study(
            "new", None, None, storage=url, from_study="old", skip_measured_seeds=skip
        )
        seeds_again = []  # the new study's initial-design queries at a carried measurement
        for _ in range(6):
            q = new.ask()
            new.tell(q.id, {"f": q.params["dose"], "g": g_of(q.params)})
            if q.query.initial and (q.params["dose"], q.params["t"]) in measured:
                seeds_again.append((q.params["dose"], q.params["t"]))
        if skip:
            assert seeds_again == []
        else:  # as before the option: every seed is asked again
            assert len(seeds_again) == new.status()["settings"]["n_initial"] > 0


def test_a_safe_study_from_before_the_seed_skip_asks_every_seed():
    """A study whose pins lack skip_measured_seeds was created before it: built with False
    (pinning.ADDED_LATER), so its log replays; a new study pins True."""
    from boloop.study.pinning import policy_options
    from study_samples import SMALL_DOSE

    new = create_study("d", "m-safeopt", SMALL_DOSE, storage="memory://seed-pin", seed=0)
    assert new.pinned_defaults["skip_measured_seeds"] is True
    before = {k: v for k, v in new.pinned_defaults.items() if k != "skip_measured_seeds"}
    assert policy_options("m-safeopt", "safe", {}, before)["skip_measured_seeds"] is False
