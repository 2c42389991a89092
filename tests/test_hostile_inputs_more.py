"""A second hostile-input trial (the first: ``test_hostile_inputs.py``), at the entry points it
did not try: ``boloop bench run|plot|summary``, ``boloop problems|methods|metrics``, the
media files of a study's space, and a token server built with ``create_app``. What a user
mistypes or a script misuses is refused with a message naming what is wrong (a
:class:`~boloop.errors.BoloopError`; exit status 2 and one ``boloop: error:`` line), and nothing
already written is lost or changed."""

from __future__ import annotations

import pytest

from cli_runner import assert_refused, run_cli

SWEEP = ["--problem", "levelset/sinusoidal", "--method", "random", "--budget", "2", "--quiet"]


# -- boloop bench run --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "seeds,words",
    [
        ("²", "seeds must be 'N'"),  # a digit to str.isdigit, not to int(): was a ValueError
        ("0-99999999999", "at most"),  # was a MemoryError after filling the memory
        ("99999999999999999999", "at most"),  # was an OverflowError
    ],
)
def test_bench_run_refuses_seeds_it_cannot_read_or_hold(tmp_path, seeds, words):
    res = run_cli(["bench", "run", *SWEEP, "--seeds", seeds, "--out", "out"], cwd=tmp_path)
    assert_refused(res, words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["bench", "run", *SWEEP, "--out"], ["demo", "--out"]])
@pytest.mark.parametrize("out", ["notes.txt", "notes.txt/sweep"])
def test_an_output_folder_that_is_a_file_is_refused_and_the_file_kept(tmp_path, command, out):
    """``--out`` naming a file (or a folder inside one) was a NotADirectoryError traceback."""
    (tmp_path / "notes.txt").write_text("my notes\n", encoding="utf-8")
    res = run_cli([*command, out], cwd=tmp_path)
    assert_refused(res, "'notes.txt' is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "my notes\n"


def test_bench_plot_refuses_an_output_folder_that_is_a_file(tmp_path):
    pytest.importorskip("matplotlib")
    res = run_cli(["bench", "run", *SWEEP, "--out", "sweep"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    (tmp_path / "notes.txt").write_text("my notes\n", encoding="utf-8")
    res = run_cli(["bench", "plot", "sweep", "--out", "notes.txt"], cwd=tmp_path)
    assert_refused(res, "'notes.txt' is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "my notes\n"


@pytest.mark.parametrize("command", [["bench", "summary", "sweep"], ["bench", "plot", "sweep"],
                                     ["bench", "run", *SWEEP, "--out", "sweep"]])  # fmt: skip
def test_a_results_file_saved_in_another_encoding_is_refused_and_kept(tmp_path, command):
    """A results.csv edited and saved as Windows-1252 (a note added in a spreadsheet) was a
    UnicodeDecodeError traceback from each of them."""
    if command[1] == "plot":
        pytest.importorskip("matplotlib")
    res = run_cli(["bench", "run", *SWEEP, "--out", "sweep"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    results = tmp_path / "sweep" / "results.csv"
    edited = results.read_bytes().replace(b"random,0,2,", b"random\xe9,0,2,")
    results.write_bytes(edited)
    res = run_cli(command, cwd=tmp_path)
    assert_refused(res, "results.csv", "not UTF-8", "0xe9")
    assert results.read_bytes() == edited  # not rewritten


def test_a_results_file_a_spreadsheet_saved_with_a_byte_order_mark_is_read(tmp_path):
    res = run_cli(["bench", "run", *SWEEP, "--out", "sweep"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    results = tmp_path / "sweep" / "results.csv"
    results.write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    res = run_cli(["bench", "summary", "sweep"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "| random | 1 | 2 |" in res.stdout
    res = run_cli(["bench", "run", *SWEEP, "--out", "sweep"], cwd=tmp_path)  # kept, not rerun
    assert res.returncode == 0 and "0 runs completed, 1 skipped" in res.stdout, res.stdout


# -- boloop problems | methods | metrics -------------------------------------------------------
@pytest.mark.parametrize("command", ["problems", "methods", "metrics"])
@pytest.mark.parametrize("family", ["levelst", "LEVELSET", ""])
def test_a_family_that_is_none_is_refused_naming_the_families(tmp_path, command, family):
    """A misspelt --family said "no problems registered" and exited 0, as if the library had
    none."""
    res = run_cli([command, "--family", family], cwd=tmp_path)
    assert_refused(res, f"family {family!r}", "expert, levelset, preference, safe")
    res = run_cli([command, "--family", "levelset"], cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("levelset:\n"), res.stdout


# -- a token server ------------------------------------------------------------------------------
LEVEL_SET = {
    "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}],
    "threshold": 0.5,
}


@pytest.mark.parametrize(
    "token,words",
    [
        ("", "at least 8 characters"),  # every page went to a login no token could pass
        ("   ", "at least 8 characters"),
        ("short", "at least 8 characters"),  # boloop serve --token refused it; create_app not
        ("héllo-wörld-2026", "printable ASCII"),  # the page's login took it, the API never
        ("tab\tinside-token", "printable ASCII"),
    ],
)
def test_create_app_refuses_a_token_nobody_could_log_in_with(tmp_path, token, words):
    pytest.importorskip("fastapi")
    from boloop.errors import BoloopError
    from boloop.web import create_app

    with pytest.raises(BoloopError, match=f"token .*{words}"):
        create_app(f"sqlite:///{tmp_path / 'w.db'}", token)
    res = run_cli(["serve", "--token", token, "--storage", f"sqlite:///{tmp_path / 'w.db'}"],
                  cwd=tmp_path)  # fmt: skip
    assert_refused(res, "--token", words)


def test_a_token_given_with_spaces_around_it_logs_in_by_page_link_and_api(tmp_path):
    """``create_app(url, " lab-token-2026\\n")`` (read from a file) let nobody in: the login
    strips what is typed, the token was compared with its spaces."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.study import create_study
    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'w.db'}"
    create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=url)
    app = create_app(url, " lab-token-2026\n")
    api = TestClient(app).get("/api/studies", headers={"Authorization": "Bearer lab-token-2026"})
    assert api.status_code == 200 and api.json()[0]["name"] == "coat", api.text
    browser = TestClient(app, follow_redirects=False)
    assert browser.get("/login?token=lab-token-2026").status_code == 303
    assert browser.get("/studies/coat").status_code == 200
    wrong = TestClient(app, follow_redirects=False).get("/login?token=lab-token-2027")
    assert wrong.status_code == 401 and "wrong token" in wrong.text


# -- media files of a space --------------------------------------------------------------------
def test_a_media_file_beyond_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    """A 5 GB file named as a picture was read whole (5 GB of memory, half a minute) before
    the 32 MB limit refused it. The file here is sparse: reading it whole would take 1 GB."""
    import tracemalloc

    from boloop.errors import BoloopError
    from boloop.study import create_study, list_studies

    (tmp_path / "t.csv").write_text("name,sugar,photo\nplain,0.1,a.png\nsweet,0.9,b.png\n")
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with open(tmp_path / "b.png", "wb") as fh:
        fh.truncate(2**30)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    tracemalloc.start()
    try:
        with pytest.raises(BoloopError, match=r"exceed 32 MB \(at 'b.png', 1073741824 bytes\)"):
            create_study("cake", "eubo", tmp_path / "t.csv", seed=0, storage=url)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, peak
    assert list_studies(storage=url) == []


# -- problem and method ids with options -------------------------------------------------------
@pytest.mark.parametrize(
    "flag,given,words",
    [
        ("--problem", "levelset/sinusoidal?", "has a '?' and no option after it"),
        ("--problem", "levelset/sinusoidal?threshold=1&threshold=2", "'threshold' is given twice"),
        ("--method", "random?n_initial=2&n_initial=3", "'n_initial' is given twice"),
    ],
)
def test_bench_run_refuses_an_id_with_an_empty_or_repeated_option(tmp_path, flag, given, words):
    """``levelset/sinusoidal?`` ran as a problem of its own (its runs made again beside those
    of ``levelset/sinusoidal``, a row of its own in the summary); an option given twice took
    the last value silently."""
    res = run_cli(["bench", "run", *SWEEP, "--out", "sweep"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    kept = (tmp_path / "sweep" / "results.csv").read_bytes()
    argv = ["--problem", "levelset/sinusoidal", "--method", "random", flag, given]  # last wins
    res = run_cli(["bench", "run", *argv, "--budget", "2", "--out", "sweep"], cwd=tmp_path)
    assert_refused(res, words)
    assert (tmp_path / "sweep" / "results.csv").read_bytes() == kept


def test_study_create_refuses_a_problem_id_with_an_empty_or_repeated_option(tmp_path):
    from boloop.study import list_studies

    url = f"sqlite:///{tmp_path / 's.db'}"
    for given, words in (("levelset/toy?", "no option after it"),
                         ("expert/ackley4?a=-2&a=3", "'a' is given twice")):  # fmt: skip
        res = run_cli(["study", "create", "x", "--problem", given, "--storage", url],
                      cwd=tmp_path)  # fmt: skip
        assert_refused(res, words)
    assert list_studies(storage=url) == []


def test_study_create_refuses_a_method_id_with_a_question_mark_naming_the_method(tmp_path):
    """'randomized-straddle?' was refused as carrying options, naming none: "create_study(...,
    )" and "``"."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    res = run_cli(["study", "create", "x", "--problem", "levelset/toy", "--method",
                   "randomized-straddle?", "--storage", url], cwd=tmp_path)  # fmt: skip
    assert_refused(res, "no option after it", "give the method as 'randomized-straddle'")
    assert "``" not in res.stderr

def test_a_study_stored_with_an_empty_option_list_still_loads(tmp_path):
    """Ids already stored are read as they are: the check is for new ones only."""
    import sqlite3

    from boloop.study import create_study, load_study

    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("x", "randomized-straddle", problem="levelset/toy", seed=0, storage=url)
    study.tell(study.ask().id, 0.3)
    con = sqlite3.connect(tmp_path / "s.db")  # as an older boloop stored it
    with con:
        n = con.execute(
            "UPDATE boloop_events SET payload = replace(payload, '\"levelset/toy\"', "
            "'\"levelset/toy?\"') WHERE payload LIKE '%\"levelset/toy\"%'"
        ).rowcount
        con.execute("DELETE FROM boloop_snapshots")
    con.close()
    assert n == 1
    study = load_study("x", storage=url)
    assert study.config["problem"] == "levelset/toy?"
    study.tell(study.ask().id, 0.6)
    assert load_study("x", storage=url).status()["answered"] == 2


def test_a_study_stored_with_an_empty_option_list_is_continued_under_a_new_name(tmp_path):
    """create_study(NEW, from_study=OLD) takes the old study's problem as stored: the check of
    a new id is for ids a person types (it refused to continue a stored 'levelset/toy?')."""
    from boloop.problems import get
    from boloop.study import create_study

    url = f"sqlite:///{tmp_path / 's.db'}"
    old = create_study("old", "randomized-straddle", problem=get("levelset/toy?"), seed=0,
                       storage=url)  # fmt: skip
    assert old.config["problem"] == "levelset/toy?"  # as an older boloop stored it
    old.tell(old.ask().id, 0.3)
    new = create_study("new", from_study="old", storage=url)
    assert new.config["problem"] == "levelset/toy?"
    assert new.status()["answered"] == 1
    res = run_cli(["study", "create", "newer", "--from", "old", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr


# -- boloop study migrate ----------------------------------------------------------------------
#: a migrate killed (SIGKILL, a power cut) after the target committed its copy of study "coat"
#: and before the source committed its mark
KILLED_MIGRATE = """
import os, sys
import boloop.study.storage_migrate as m
opened = m.open_storage
def open_storage(url, create=False):
    storage = opened(url, create=create)
    if url == sys.argv[2]:
        imported = storage.import_study
        def import_study(*args, **kwargs):
            imported(*args, **kwargs)
            os._exit(9)
        storage.import_study = import_study
    return storage
m.open_storage = open_storage
m.migrate_studies(sys.argv[1], sys.argv[2], ["coat"])
"""


def _killed_migrate(tmp_path, src: str, dst: str) -> None:
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", KILLED_MIGRATE, src, dst], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 9, res.stderr


def test_a_migrate_killed_between_copy_and_mark_is_finished_by_running_it_again(tmp_path):
    """The target kept a copy, the source was not marked: both took answers, and the same
    migrate was refused ("already has the studies"), its --undo too ("not marked as moved"),
    with no command left to mend it."""
    from boloop.study import create_study, load_study

    src, dst = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=src)
    for value in (0.2, 0.4):
        study.tell(study.ask().id, value)
    log = load_study("coat", storage=src).history(withdrawn=True)
    _killed_migrate(tmp_path, src, dst)
    res = run_cli(["study", "migrate", "--from", src, "--to", dst], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = run_cli(["study", "add", "coat", "t=0.5", "0.3", "--storage", src], cwd=tmp_path)
    assert_refused(res, "was moved to")
    moved = load_study("coat", storage=dst)
    assert moved.history(withdrawn=True) == log
    moved.tell(moved.ask().id, 0.6)
    assert load_study("coat", storage=dst).status()["answered"] == 3


def test_a_copy_left_by_a_killed_migrate_and_answered_since_is_not_taken_over(tmp_path):
    from boloop.study import create_study, load_study

    src, dst = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    study = create_study("coat", "randomized-straddle", LEVEL_SET, seed=0, storage=src)
    study.tell(study.ask().id, 0.2)
    _killed_migrate(tmp_path, src, dst)
    copy = load_study("coat", storage=dst)
    copy.tell(copy.ask().id, 0.7)  # an answer given at the target meanwhile
    res = run_cli(["study", "migrate", "--from", src, "--to", dst], cwd=tmp_path)
    assert_refused(res, "already has the studies ['coat']")
    res = run_cli(["study", "add", "coat", "t=0.5", "0.3", "--storage", src], cwd=tmp_path)
    assert res.returncode == 0, res.stderr  # the source is not marked: still writable


@pytest.mark.parametrize("command", ["summary", "plot"])
def test_a_metric_edited_into_no_number_is_refused_naming_it(tmp_path, command):
    """``abc`` typed over a final loss was read as missing: the summary gave the mean of the
    other seed as the mean of both (its seeds column still said 2)."""
    if command == "plot":
        pytest.importorskip("matplotlib")
    argv = ["bench", "run", *SWEEP, "--seeds", "2", "--out", "sweep"]
    assert run_cli(argv, cwd=tmp_path).returncode == 0
    results = tmp_path / "sweep" / "results.csv"
    lines = results.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    row = next(
        i for i, line in enumerate(lines) if line.startswith("levelset/sinusoidal,random,0,2,")
    )
    cells = lines[row].split(",")
    cells[header.index("loss")] = "abc"
    lines[row] = ",".join(cells)
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run_cli(["bench", command, "sweep"], cwd=tmp_path)
    assert_refused(res, "loss = 'abc' is not a number", "seed 0, step 2")


@pytest.mark.parametrize(
    "name,data,words",
    [
        ("a.png", b"not a picture", "'a.png' is not a PNG file nor another picture (it begins"),
        ("a.mp3", b"\x89PNG\r\n\x1a\n", "'a.mp3' is not a MP3 file"),  # a picture as a sound
        ("a.wav", b"", "'a.wav' is not a WAV file (it is empty)"),
    ],
)
def test_a_media_file_that_is_not_of_its_suffix_is_refused(tmp_path, name, data, words):
    """Text named .png was stored and served as a picture: the page showed a broken picture
    in place of the option."""
    from boloop.study import list_studies

    (tmp_path / "t.csv").write_text(f"name,sugar,photo\nplain,0.1,{name}\nsweet,0.9,b.gif\n")
    (tmp_path / name).write_bytes(data)
    (tmp_path / "b.gif").write_bytes(b"GIF89a\x01\x00\x01\x00")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    res = run_cli(["study", "create", "cake", "--space", "t.csv", "--storage", url], cwd=tmp_path)
    assert_refused(res, words)
    assert list_studies(storage=url) == []


def test_a_picture_named_as_another_picture_format_is_taken(tmp_path):
    """A browser shows a picture by its bytes (a PNG renamed .jpg is shown, checked in
    Chromium): such a file was refused by the suffix check of the second trial."""
    from boloop.study import create_study, load_study

    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    (tmp_path / "t.csv").write_text("name,sugar,photo\nplain,0.1,a.jpg\nsweet,0.9,b.webp\n")
    (tmp_path / "a.jpg").write_bytes(png)  # a PNG renamed
    (tmp_path / "b.webp").write_bytes(b"GIF89a\x01\x00\x01\x00")  # a GIF renamed
    url = f"sqlite:///{tmp_path / 'm.db'}"
    create_study("cake", "eubo", tmp_path / "t.csv", seed=0, storage=url)
    assert load_study("cake", storage=url).name == "cake"


def test_a_flac_file_with_an_id3_tag_before_its_stream_is_taken(tmp_path):
    """Taggers write an ID3v2 tag before a FLAC stream; the suffix check took only files that
    begin with the stream's own ``fLaC`` (the second reviewer's finding)."""
    from boloop.study import create_study, load_study

    tagged = b"ID3\x04\x00\x00\x00\x00\x00\x0a" + b"\x00" * 10 + b"fLaC\x00\x00\x00\x22"
    (tmp_path / "t.csv").write_text("name,sugar,sound\nplain,0.1,a.flac\nsweet,0.9,b.flac\n")
    (tmp_path / "a.flac").write_bytes(tagged)
    (tmp_path / "b.flac").write_bytes(b"fLaC\x00\x00\x00\x22")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    create_study("cake", "eubo", tmp_path / "t.csv", seed=0, storage=url)
    assert load_study("cake", storage=url).name == "cake"


def test_parse_seeds_refuses_a_huge_sequence_before_listing_it():
    """``parse_seeds(range(10**12))`` built the whole list (memory for a trillion ints) before
    its count was checked."""
    from boloop.bench.runner import MAX_SEEDS, parse_seeds
    from boloop.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="a sweep takes at most"):
        parse_seeds(range(10**12))
    assert parse_seeds(range(3)) == [0, 1, 2]
    assert len(parse_seeds(range(MAX_SEEDS))) == MAX_SEEDS
