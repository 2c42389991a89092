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
    space = {
        "parameters": [
            {"name": "dose", "low": 0.0, "high": 1.0, "grid": 5},
            {"name": "time", "low": 0.0, "high": 1.0, "grid": 3},
        ],
        "monotone": "dose",
        "h": 1.0,
    }
    study = create_study("trial", "m-safeopt", space, seed=0, storage=url)
    q = study.ask()
    before = _log("trial", url)
    with pytest.raises(BoloopError, match="is given twice"):
        study.tell(q.id, answer)
    assert _log("trial", url) == before
    study = load_study("trial", storage=url)
    study.tell(q.id, "f=0.1,g=0.2")
    assert load_study("trial", storage=url).history()[-1]["answer"] == {"f": 0.1, "g": 0.2}
