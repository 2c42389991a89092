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
