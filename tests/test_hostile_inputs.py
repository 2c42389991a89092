"""Input a user mistypes or a script misuses, at the public entry points (``create_study``,
``Study.tell/add``, ``boloop study ...``): each is refused with a message naming what is wrong
(a :class:`~boloop.errors.BoloopError`; exit status 2 and one ``boloop: error:`` line), and the
stored log is what it was before (read back with ``load_study``)."""

from __future__ import annotations

import json

import pytest

from boloop.study import create_study, list_studies, load_study
from cli_runner import assert_refused, run_cli

LEVEL_SET = {
    "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}],
    "threshold": 0.5,
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
