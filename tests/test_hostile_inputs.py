"""Input a user mistypes or a script misuses, at the public entry points (``create_study``,
``Study.tell/add``, ``boloop study ...``): each is refused with a message naming what is wrong
(a :class:`~boloop.errors.BoloopError`; exit status 2 and one ``boloop: error:`` line), and the
stored log is what it was before (read back with ``load_study``)."""

from __future__ import annotations

import json

import pytest

from boloop.errors import BoloopError
from boloop.study import create_study, list_studies, load_study
from cli_runner import assert_refused, run_cli

LEVEL_SET = {
    "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}],
    "threshold": 0.5,
}
#: a safe study's space: dose (monotone) x time, limit h = 1
SAFE = {
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 1.0, "grid": 5},
        {"name": "time", "low": 0.0, "high": 1.0, "grid": 3},
    ],
    "monotone": "dose",
    "h": 1.0,
}


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'hostile.db'}"


def _log(name: str, url: str) -> str:
    """Everything a study has stored that a user can read: its answers, withdrawn ones too."""
    return json.dumps(load_study(name, storage=url).history(withdrawn=True), default=str)


# -- space files -------------------------------------------------------------------------------
def test_a_table_of_options_not_in_utf8_is_refused_naming_the_file_and_line(tmp_path, url):
    # a spreadsheet's plain CSV in Windows-1252: the e-acute of "creme" is the byte 0xe9
    table = tmp_path / "options.csv"
    table.write_bytes(b"name,sugar,flour\nplain,0.1,0.5\ncr\xe8me,0.9,0.5\n")
    res = run_cli(
        ["study", "create", "cake", "--family", "preference", "--space", str(table),
         "--storage", url],
        cwd=tmp_path,
    )  # fmt: skip
    line = assert_refused(res, "options.csv", "UTF-8", "line 3", "0xe8")
    assert "Traceback" not in line
    assert list_studies(storage=url) == []  # nothing created
    # the same table saved as UTF-8 (with the byte order mark a spreadsheet writes) is taken
    table.write_bytes("\ufeffname,sugar,flour\nplain,0.1,0.5\ncrème,0.9,0.5\n".encode())
    study = create_study("cake", "eubo", table, seed=0, storage=url)
    assert study.ask().kind == "compare"


# -- a name typed twice ------------------------------------------------------------------------
@pytest.mark.parametrize("params", ["t=0.3,t=0.4", "t=0.3; t=0.4", '{"t": 0.3, "t": 0.4}'])
def test_a_point_naming_a_parameter_twice_is_refused(tmp_path, url, params):
    """``t=0.3,t=0.4`` stored the measurement at t = 0.4 (the last value won, silently)."""
    create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    before = _log("coat", url)
    res = run_cli(["study", "add", "coat", params, "0.7", "--storage", url], cwd=tmp_path)
    assert_refused(res, "'t' is given twice")
    assert _log("coat", url) == before
    res = run_cli(["study", "add", "coat", "t=0.4", "0.7", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr  # the study still takes a point typed once
    assert load_study("coat", storage=url).history()[-1]["params"] == {"t": 0.4}


@pytest.mark.parametrize("answer", ["f=0.1,g=0.2,f=0.3", '{"f": 0.1, "g": 0.2, "g": 0.3}'])
def test_an_answer_naming_an_output_twice_is_refused(url, answer):
    space = SAFE
    study = create_study("trial", "m-safeopt", space, seed=0, storage=url)
    q = study.ask()
    before = _log("trial", url)
    with pytest.raises(BoloopError, match="is given twice"):
        study.tell(q.id, answer)
    assert _log("trial", url) == before
    study = load_study("trial", storage=url)
    study.tell(q.id, "f=0.1,g=0.2")
    assert load_study("trial", storage=url).history()[-1]["answer"] == {"f": 0.1, "g": 0.2}


# -- values too large to compute with ----------------------------------------------------------
def test_a_measured_value_too_large_to_compute_with_is_refused(tmp_path, url):
    """g = 1e160 was stored; two answers later every tell of the safe study raised scipy's
    "f(a) and f(b) must have different signs" (the model's squares overflowed), until undone.
    A failed run's sentinel (``sys.float_info.max``) is such a value."""
    space = {
        "parameters": [
            {"name": "dose", "low": 0.0, "high": 1.0, "grid": 6},
            {"name": "weight", "low": 0.0, "high": 1.0, "grid": 9},
        ],
        "monotone": "dose",
        "h": 0.8,
    }
    study = create_study("trial", "m-safeopt", space, seed=0, storage=url)
    q = study.ask()
    study.tell(q.id, {"f": 0.1, "g": 0.1})
    q = study.ask()
    before = _log("trial", url)
    for answer in ({"f": 0.1, "g": 1e160}, "f=0.1,g=1.7976931348623157e308", {"f": -1e101, "g": 0}):
        with pytest.raises(BoloopError, match=r"too large to compute with.*other units"):
            study.tell(q.id, answer)
        with pytest.raises(BoloopError, match="too large to compute with"):
            study.add({"dose": 0.0, "weight": 0.5}, answer)
    assert _log("trial", url) == before
    res = run_cli(["study", "tell", "trial", str(q.id), "f=0.1,g=1e160", "--storage", url],
                  cwd=tmp_path)  # fmt: skip
    assert_refused(res, "answer['g'] = 1e+160", "too large")
    assert _log("trial", url) == before
    # the study goes on, and a large value within the limit is stored as given
    study = load_study("trial", storage=url)
    for k in range(5):
        q = study.ask()
        study.tell(q.id, {"f": 0.1 * k, "g": 1e99 if k == 0 else 0.1})
    assert load_study("trial", storage=url).status()["answered"] == 6


def test_the_page_says_why_a_value_too_large_is_not_stored(url):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    import re

    from fastapi.testclient import TestClient

    from boloop.web import create_app

    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    before = _log("coat", url)
    client = TestClient(create_app(url, None), follow_redirects=False)
    page = client.get("/studies/coat")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    form = {"csrf": csrf, "query_id": str(q.id), "note": "", "value": "1e160"}
    r = client.post("/studies/coat/tell", data=form)
    assert r.status_code == 400
    assert "1e+160 is too large to compute with" in r.text  # not "must be a number"
    assert _log("coat", url) == before


# -- names and notes that are not text ---------------------------------------------------------
@pytest.mark.parametrize("name", ["line\nbreak", "nul\x00", "tab\tbed", "\ud800", ".", ".."])
def test_a_study_name_that_is_no_printable_text_or_no_web_address_is_refused(url, name):
    """A lone surrogate raised UnicodeEncodeError from the database driver; control characters
    were stored (a NUL no PostgreSQL text column takes); "." and ".." were stored but their web
    pages could never be reached (an address reads them as folder steps)."""
    with pytest.raises(BoloopError, match="name"):
        create_study(name, "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    assert list_studies(storage=url) == []
    for fine in ("...", "a.b", "Härte/2026", "é✓💥"):  # still names
        create_study(fine, "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    assert {row["name"] for row in list_studies(storage=url)} == {
        "...",
        "a.b",
        "Härte/2026",
        "é✓💥",
    }


def test_a_note_with_bytes_that_are_not_utf8_is_refused_and_export_still_works(tmp_path, url):
    """A shell passes a byte that is not UTF-8 (a Latin-1 terminal's e-acute) to Python as a
    lone surrogate: the note was stored, and every later ``export`` to CSV raised
    UnicodeEncodeError, leaving a half-written file that the next export refused to replace."""
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    before = _log("coat", url)
    for note in ("caf\udce9 batch", "nul\x00"):
        res = run_cli(
            ["study", "tell", "coat", str(q.id), "0.4", "--note", note, "--storage", url],
            cwd=tmp_path,
        )
        assert_refused(res, "note has a character that is not text")
        assert _log("coat", url) == before
    # a note of lines and tabs (a web form's text box sends CR LF) is a note
    study.tell(q.id, 0.4, note="batch 7\r\nrack\t3")
    res = run_cli(["study", "export", "coat", "--out", "coat.csv", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "rack\t3" in (tmp_path / "coat.csv").read_text(encoding="utf-8")


# -- parameter names ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", "   ", " t", "t ", "two\nlines", "bell\x07"])
def test_a_parameter_name_no_one_can_type_or_read_is_refused(tmp_path, url, name):
    """An empty name was stored: the study asked "measure the value at =0.5", and a point could
    be typed for it only as JSON; a name with spaces around it could not be typed as name=value
    at all (the spaces are dropped)."""
    space = {"parameters": [{"name": name, "low": 0.0, "high": 1.0, "grid": 5}], "threshold": 0.5}
    with pytest.raises(BoloopError, match=r"parameter name .* visible characters"):
        create_study("coat", "randomized-straddle", space, seed=0, storage=url)
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space), encoding="utf-8")
    res = run_cli(["study", "create", "coat", "--space", str(path), "--storage", url],
                  cwd=tmp_path)  # fmt: skip
    assert_refused(res, "parameter name")
    assert list_studies(storage=url) == []


def test_bounds_too_far_apart_to_compute_with_are_refused_naming_the_parameter(url):
    """They were refused with "points contains NaN or infinite values" (and numpy's overflow
    warnings), naming neither the parameter nor the bounds."""
    space = {"parameters": [{"name": "t", "low": -1e308, "high": 1e308}], "threshold": 0.5}
    with pytest.raises(BoloopError, match=r"parameter 't': the range .* too wide"):
        create_study("coat", "randomized-straddle", space, seed=0, storage=url)
    assert list_studies(storage=url) == []


# -- the web application ------------------------------------------------------------------------
def _client(url):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    return TestClient(create_app(url, None), follow_redirects=False)


@pytest.mark.parametrize("name", ["Härte", "硬度"])
def test_the_page_exports_a_study_whose_name_is_not_ascii(url, name):
    create_study(name, "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    client = _client(url)
    from urllib.parse import quote

    for ext in ("csv", "json"):
        r = client.get(f"/studies/{quote(name, safe='')}/export.{ext}")
        assert r.status_code == 200, r.text
        assert "attachment" in r.headers["content-disposition"]


def test_the_api_refuses_an_answer_with_a_key_it_does_not_know(url):
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    before = _log("coat", url)
    r = _client(url).post(
        "/api/studies/coat/tell", json={"query_id": q.id, "answer": 0.4, "notes": "coupon 7"}
    )
    assert r.status_code == 400 and "notes" in r.json()["detail"], r.text
    assert _log("coat", url) == before


@pytest.mark.parametrize(
    "body",
    [
        '{"query_id": QID, "answer": 0.1, "answer": 0.9}',
        '{"query_id": QID, "answer": {"f": 0.1, "f": 0.9}}',
        '{"query_id": QID, "answer": 0.4, "note": "a", "note": "b"}',
    ],
)
def test_the_api_refuses_a_body_naming_a_key_twice(url, body):
    """A JSON body naming a key twice: the last value was stored silently, as a typed answer
    naming an output twice was (``f=0.1,f=0.9``, refused by ``read_json``)."""
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    before = _log("coat", url)
    r = _client(url).post(
        "/api/studies/coat/tell",
        content=body.replace("QID", str(q.id)),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and "is given twice" in r.json()["detail"], r.text
    assert _log("coat", url) == before
    ok = _client(url).post("/api/studies/coat/tell", json={"query_id": q.id, "answer": 0.4})
    assert ok.status_code == 200, ok.text


def test_a_safe_noise_setting_that_is_no_number_is_refused_naming_it(url):
    """``noise_g = "x"`` in [settings] was refused as "method 'm-safeopt' cannot be built with
    options (none): could not convert string to float: 'x'", naming neither the setting nor
    where it was given."""
    space = SAFE
    for bad in ("x", None, -1.0, [1e-4]):
        with pytest.raises(BoloopError, match=r"noise_g must be"):
            create_study("trial", "m-safeopt", {**space, "settings": {"noise_g": bad}}, seed=0,
                         storage=url)  # fmt: skip
    assert list_studies(storage=url) == []


def test_a_safe_seed_with_a_name_that_is_no_parameter_is_refused(url):
    """``{"dose": 0, "time": 0.5, "tmie": 0.9}`` was taken, the misspelt value dropped."""
    space = {**SAFE, "safe_seeds": [{"dose": 0.0, "time": 0.5, "tmie": 0.9}]}
    with pytest.raises(
        BoloopError, match=r"safe_seeds\[0\] has unknown parameter names \['tmie'\]"
    ):
        create_study("trial", "m-safeopt", space, seed=0, storage=url)
    assert list_studies(storage=url) == []


def test_the_create_form_names_an_uploaded_file_as_uploaded(url):
    """A refused upload was named by the server's temporary path
    (``/tmp/boloop-upload-abc123/options.csv``): the person never saw that path."""
    import re

    client = _client(url)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    form = {"csrf": csrf, "name": "cake", "method": "preference/eubo"}
    table = ("options.csv", b"name,sugar\nplain,0.1\ncr\xe8me,0.9\n", "text/csv")
    r = client.post("/studies", data=form, files=[("space", table)])
    assert r.status_code == 400, r.status_code
    assert "options.csv" in r.text and "line 3" in r.text
    assert "boloop-upload-" not in r.text
    assert list_studies(storage=url) == []


# -- study/core.py and its modules --------------------------------------------------------------
@pytest.mark.parametrize("labels", [["b", "a"], ["right", "left"]])
def test_an_option_named_like_the_other_sides_duel_word_is_not_read_as_that_side(
    tmp_path, url, labels
):
    table = {"columns": ["x"], "rows": [[0.1], [0.9]], "labels": labels}
    study = create_study("cake", "eubo", {"candidates": table}, seed=0, storage=url)
    q = study.ask()
    assert (q.a_label, q.b_label) == tuple(labels)  # the duel this test is about
    before = _log("cake", url)
    # the person types the name of option B, which is also the word for A
    res = run_cli(["study", "tell", "cake", str(q.id), q.b_label, "--storage", url], cwd=tmp_path)
    stored = load_study("cake", storage=url).history()
    assert res.returncode == 2, f"stored {stored[-1]['answer_text']!r} for B's name {q.b_label!r}"
    assert _log("cake", url) == before
    assert f"is the word for A ({q.a_label!r}) and the name of B" in res.stderr, res.stderr


def test_ask_suggests_the_duel_words_that_no_option_is_named(tmp_path, url):
    """``ask`` said ``tell cake 0 a|b`` of a duel whose options are named b and a, and ``a``
    is refused there: it suggests the words that answer each side without doubt, which are
    taken."""
    table = {"columns": ["x"], "rows": [[0.1], [0.9]], "labels": ["b", "a"]}
    study = create_study("cake", "eubo", {"candidates": table}, seed=0, storage=url)
    q = study.ask()
    assert (q.a_label, q.b_label) == ("b", "a")
    res = run_cli(["study", "ask", "cake", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "answer with: boloop study tell cake 0 1|2" in res.stdout, res.stdout
    res = run_cli(["study", "tell", "cake", "0", "1", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert [r["answer"] for r in load_study("cake", storage=url).history()] == [0]


def test_free_duel_words_leave_each_side_a_word():
    from boloop.study.answers import free_duel_words

    assert free_duel_words("p", "q") == (["a", "1", "left", "first"], ["b", "2", "right", "second"])
    assert free_duel_words(None, None) == free_duel_words("p", "q")
    assert free_duel_words("b", "a") == (["1", "left", "first"], ["2", "right", "second"])
    assert free_duel_words("b", "a", one_key=True) == (["1"], ["2"])
    # "a" names A itself: it means A either way; "1", B's name, is the doubtful word for A
    assert free_duel_words("a", "1", one_key=True) == (["a"], ["b", "2"])


@pytest.mark.parametrize("button,side", [("a", 0), ("b", 1)])
def test_the_pages_buttons_answer_a_side_whatever_the_options_are_named(url, button, side):
    """The page's "A is better" / "B is better" buttons send a and b: with options named b and
    a they mean the side, never the option of that name (which study.tell now refuses)."""
    import re

    table = {"columns": ["x"], "rows": [[0.1], [0.9]], "labels": ["b", "a"]}
    study = create_study("cake", "eubo", {"candidates": table}, seed=0, storage=url)
    q = study.ask()
    assert (q.a_label, q.b_label) == ("b", "a")
    client = _client(url)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/studies/cake").text).group(1)
    r = client.post(
        "/studies/cake/tell", data={"csrf": csrf, "query_id": str(q.id), "answer": button}
    )
    assert r.status_code in (200, 303), r.text
    stored = load_study("cake", storage=url).history()
    assert [row["answer"] for row in stored] == [side]


def test_an_export_that_fails_leaves_no_half_written_file(tmp_path):
    import sqlite3

    url = f"sqlite:///{tmp_path / 'old.db'}"
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    for value in (0.2, 0.4):
        q = study.ask()
        study.tell(q.id, value, note="NOTE")
    # a note an older boloop stored: a byte that was not UTF-8, as a shell passed it
    con = sqlite3.connect(tmp_path / "old.db")
    with con:
        con.execute("UPDATE boloop_events SET payload = replace(payload, 'NOTE', '\\udce9')")
        con.execute("DELETE FROM boloop_snapshots")
    con.close()
    out = tmp_path / "coat.csv"
    try:
        load_study("coat", storage=url).export(str(out))
    except Exception:  # refused or failed: then nothing is written
        assert not out.exists(), out.read_text(encoding="utf-8", errors="replace")
    else:
        assert len(out.read_text(encoding="utf-8", errors="replace").splitlines()) == 3


def test_an_export_writes_through_a_link_and_keeps_the_files_permissions(tmp_path):
    """Written beside its file and renamed (so that a failed write leaves none half-written),
    an export replaced a link with a file of its own (the file the link names kept its old
    rows) and gave a file shared with a group the permissions of the process's umask."""
    import os
    import stat

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    study.tell(q.id, 0.4)
    (tmp_path / "results").mkdir()
    shared = tmp_path / "results" / "coat.csv"
    shared.write_text("last week's rows\n", encoding="utf-8")
    shared.chmod(0o664)
    (tmp_path / "latest.csv").symlink_to(shared)
    old_umask = os.umask(0o077)
    try:
        study.export(str(tmp_path / "latest.csv"))
    finally:
        os.umask(old_umask)
    assert (tmp_path / "latest.csv").is_symlink()
    assert shared.read_text(encoding="utf-8").startswith("query_id,"), shared.read_text()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664
    assert not [p for p in tmp_path.rglob("*.part")]  # nothing left beside either


# -- storage URLs ------------------------------------------------------------------------------
def test_a_sqlite_url_with_two_slashes_is_refused_saying_how_to_write_it(tmp_path):
    """``sqlite://lab.db`` (a slash short) is SQLite in memory to SQLAlchemy: ``create`` said
    "created study" and the next command found no study (and Python lost it at exit)."""
    (tmp_path / "space.json").write_text(json.dumps(LEVEL_SET), encoding="utf-8")
    for url in ("sqlite://lab.db", "sqlite://data/lab.db"):
        res = run_cli(["study", "create", "coat", "--space", "space.json", "--storage", url],
                      cwd=tmp_path)  # fmt: skip
        assert_refused(res, "two slashes", "sqlite:///")
        with pytest.raises(BoloopError, match="two slashes"):
            create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.json"]


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite+pysqlite:///?mode=memory",
        # SQLAlchemy decodes the query: mode=memory (the quick text check let it through)
        "sqlite:///file:lab?uri=true&mode=%6Demory",
    ],
)
def test_the_cli_refuses_a_sqlite_database_without_a_file(tmp_path, url):
    """Each ``boloop study`` command is a process of its own: a study created there was
    reported created and was gone at the next command."""
    (tmp_path / "space.json").write_text(json.dumps(LEVEL_SET), encoding="utf-8")
    res = run_cli(["study", "create", "coat", "--space", "space.json", "--storage", url],
                  cwd=tmp_path)  # fmt: skip
    assert_refused(res, "without a file", "outlive the command")
    res = run_cli(["study", "list"], cwd=tmp_path, env={"BOLOOP_STORAGE": url})
    assert_refused(res, "$BOLOOP_STORAGE", "without a file")


def test_a_storage_url_whose_host_cannot_be_read_is_refused(tmp_path):
    """``[::1`` without its bracket raised ValueError from SQLAlchemy's URL parser: a
    traceback."""
    res = run_cli(["study", "list", "--storage", "postgresql+psycopg://me@[::1/lab"],
                  cwd=tmp_path)  # fmt: skip
    assert_refused(res, "is not a valid URL")


# -- boloop serve ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,words",
    [
        (["--port", "99999"], "argument --port: a port is 0-65535"),  # was OverflowError
        (["--port", "-1"], "argument --port: a port is 0-65535"),
        (["--poll", "nan"], "argument --poll: seconds between checks"),  # pages were 500s
        (["--poll", "inf"], "argument --poll: seconds between checks"),
        (["--poll", "1e12"], "argument --poll: seconds between checks"),  # pages poll nonstop
        (["--poll", "-1"], "argument --poll: seconds between checks"),  # was off, silently
    ],
)
def test_serve_refuses_a_port_or_poll_it_cannot_use_before_starting(tmp_path, argv, words):
    pytest.importorskip("fastapi")
    res = run_cli(["serve", *argv, "--storage", f"sqlite:///{tmp_path / 'w.db'}"], cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert words in res.stderr and "Traceback" not in res.stderr
    assert "http://" not in res.stdout + res.stderr  # refused before an address is printed


@pytest.mark.parametrize("poll", [float("nan"), float("inf"), -1.0])
def test_create_app_refuses_a_poll_interval_the_page_cannot_use(url, poll):
    pytest.importorskip("fastapi")
    from boloop.web import create_app

    create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    with pytest.raises(BoloopError, match="poll"):
        create_app(url, None, poll_seconds=poll)


# -- JSON nested deeper than Python's recursion limit ------------------------------------------
DEEP = "[" * 5000 + "]" * 5000


def test_an_answer_of_json_nested_too_deeply_is_refused(tmp_path, url):
    """``json.loads`` raises RecursionError on it: a traceback from ``tell`` and the CLI, a 500
    from the API."""
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    before = _log("coat", url)
    with pytest.raises(BoloopError, match="needs a number"):
        study.tell(q.id, DEEP)
    res = run_cli(["study", "tell", "coat", str(q.id), DEEP, "--storage", url], cwd=tmp_path)
    assert_refused(res, "needs a number")
    res = run_cli(["study", "add", "coat", "{" + DEEP, "0.5", "--storage", url], cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    r = _client(url).post("/api/studies/coat/tell", json={"query_id": q.id, "answer": DEEP})
    assert r.status_code == 400, r.text
    assert _log("coat", url) == before
    res = run_cli(["study", "create", "deep", "--problem", "levelset/toy", "--option",
                   f"noise_variance={DEEP}", "--storage", url], cwd=tmp_path)  # fmt: skip
    assert res.returncode == 2 and "noise_variance" in res.stderr, res.stderr


@pytest.mark.parametrize("options", ["noise_variance=" + DEEP, '{"noise_variance": ' + DEEP + "}"])
def test_the_create_form_refuses_options_nested_too_deeply(url, options):
    import re

    client = _client(url)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    form = {"csrf": csrf, "name": "deep", "method": "randomized-straddle", "options": options}
    space = ("space.json", json.dumps(LEVEL_SET).encode(), "application/json")
    r = client.post("/studies", data=form, files=[("space", space)])
    assert r.status_code == 400, r.status_code
    assert list_studies(storage=url) == []


def test_history_takes_withdrawn_as_true_or_false_only(url):
    """``history(withdrawn="no")`` read as true (a non-empty string) and listed the withdrawn
    answers."""
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    q = study.ask()
    study.tell(q.id, 0.3)
    study.undo()
    assert len(study.history(withdrawn=True)) == 1 and study.history(withdrawn=False) == []
    for bad in ("no", "yes", 0, None):
        with pytest.raises(BoloopError, match="withdrawn must be True or False"):
            study.history(withdrawn=bad)


@pytest.mark.parametrize(
    "method,problem,family",
    [("cobol", "expert/ackley4", "an expert"), ("eubo", "preference/toy", "a preference")],
)
def test_find_floor_names_the_family_of_a_study_it_does_not_apply_to(url, method, problem, family):
    """It said "is a expert study"."""
    study = create_study("x", method, problem=problem, seed=0, storage=url)
    with pytest.raises(BoloopError, match=f"is {family} study: the search for min_lengthscale_g"):
        study.find_floor_g()


def test_a_study_whose_older_notes_have_control_characters_can_be_continued(tmp_path):
    """A note an older boloop stored with a control character or a byte that was not UTF-8
    does not stop ``create_study(NEW, from_study=OLD)``: the carried note shows U+FFFD in its
    place (the carry was refused: 'note has a character that is not text', of a note the
    person never typed)."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'old.db'}"
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    for value, note in ((0.2, "ESCNOTE"), (0.4, "BADNOTE")):
        q = study.ask()
        study.tell(q.id, value, note=note)
    con = sqlite3.connect(tmp_path / "old.db")
    with con:  # as an older boloop stored them
        con.execute("UPDATE boloop_events SET payload = replace(payload, 'ESCNOTE', 'a\\u001bb')")
        con.execute("UPDATE boloop_events SET payload = replace(payload, 'BADNOTE', 'caf\\udce9')")
        con.execute("DELETE FROM boloop_snapshots")
    con.close()
    new = create_study("coat2", from_study="coat", storage=url)
    notes = [row["note"] for row in new.history()]
    assert len(notes) == 2
    assert notes[0].endswith(": a\ufffdb") and notes[1].endswith(": caf\ufffd"), notes


@pytest.mark.parametrize(
    "candidates,key",
    [
        ({"columns": "xy", "rows": [[0.1, 0.2], [0.3, 0.4]]}, "columns"),  # read as x and y
        ({"columns": ["x"], "rows": "12"}, "rows"),
        ({"columns": ["x"], "rows": [[0.1], [0.2]], "labels": "ab"}, "labels"),
    ],
)
def test_a_table_whose_columns_rows_or_labels_are_a_string_is_refused(url, candidates, key):
    """``"columns": "xy"`` became the two columns x and y (a string read letter by letter)."""
    with pytest.raises(BoloopError, match=f"candidates '{key}' must be a list, got str"):
        create_study("cake", "eubo", {"candidates": candidates}, seed=0, storage=url)
    assert list_studies(storage=url) == []
