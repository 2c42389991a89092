"""``boloop study run`` (and ``study tell``) after a colleague answered the same query first, or
withdrew an answer, from elsewhere (a newcomer's trial: the loop printed only ``error: study
'dose3': query 23 was already answered at 2026-11-27T19:17:29Z`` and went on to query 24). The
loop says, as the web page does, that the typed answer was NOT stored, what stands instead (the
colleague's value, when, their note) and which query it asks next.

The loop runs in a real child process reading a pipe; the colleague is this process, answering
through the storage between the loop's question and the typed answer.
"""

from __future__ import annotations

import subprocess
import sys

from boloop.study import create_study, load_study
from cli_runner import assert_refused, run_cli
from test_study_cli import _PipeReader, _waiting_at_prompt

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def _told_at(url: str, query_id: int) -> str:
    row = [r for r in load_study("dose", storage=url).history() if r["query_id"] == query_id][-1]
    return row["told_at"][:19].replace("T", " ") + " UTC"


def test_the_loop_says_the_typed_answer_was_not_stored_and_what_stands(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("dose", "toy-random", SPACE, family="levelset", storage=url, seed=3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boloop.cli", "study", "run", "dose", "--storage", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = _PipeReader(proc.stdout)
    colleague = load_study("dose", storage=url)
    try:
        # 1. the colleague answers the loop's query first, with another value and a note
        assert out.wait_for(lambda t: _waiting_at_prompt(t, 1)), out.text
        q1 = colleague.ask().id
        colleague.tell(q1, 0.25, note="bob")
        proc.stdin.write("0.7\n")
        proc.stdin.flush()
        assert out.wait_for(lambda t: _waiting_at_prompt(t, 2)), out.text
        said = out.text.split("] > ")[1]
        assert (
            f"NOT STORED: your answer to query {q1} (0.7) was not stored: query {q1} was "
            f"answered first elsewhere (another person, page or program). Stored instead: "
            f"0.25, given {_told_at(url, q1)}, note 'bob'. The next query is asked below."
        ) in said
        assert "error:" not in said and "stored. progress" not in said

        # 2. the same value as the colleague's: nothing is stored twice
        q2 = colleague.ask().id
        assert f"query {q2}:" in out.text.split("] > ")[1]  # the loop asks it
        colleague.tell(q2, 0.5)
        proc.stdin.write("0.5\n")
        proc.stdin.flush()
        assert out.wait_for(lambda t: _waiting_at_prompt(t, 3)), out.text
        said = out.text.split("] > ")[2]
        assert (
            f"not stored again: query {q2} already holds the same answer as yours (0.5, given "
            f"{_told_at(url, q2)}); nothing is stored twice."
        ) in said

        # 3. the colleague withdraws the last answer: the loop's query is no longer open
        q3 = colleague.ask().id
        assert f"query {q3}:" in said
        colleague.undo()  # q2's answer: q2 is open again
        proc.stdin.write("0.9\n")
        proc.stdin.flush()
        assert out.wait_for(lambda t: _waiting_at_prompt(t, 4)), out.text
        said = out.text.split("] > ")[3]
        assert (
            f"NOT STORED: your answer to query {q3} (0.9) was not stored: query {q3} is no "
            "longer open (an undo elsewhere withdrew an answer at 20"
        ) in said
        assert f"The open query ({q2}) is asked below." in said
        assert f"query {q2}:" in said  # asked again
        proc.stdin.write("0.4\n")  # answered now: stored as usual
        proc.stdin.write("q\n")
        proc.stdin.flush()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.finish()
    assert proc.returncode == 0, proc.stderr.read()
    assert "stored. progress: 2 answers" in text
    rows = [(r["query_id"], r["answer"], r["note"]) for r in load_study("dose", url).history()]
    assert rows == [(q1, 0.25, "bob"), (q2, 0.4, None)]


def test_a_late_tell_names_the_answer_that_stands(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "toy-random", SPACE, family="levelset", storage=url, seed=3)
    q = study.ask().id
    study.tell(q, 0.25, note="bob")
    res = run_cli(["study", "tell", "dose", str(q), "0.7", "--storage", url], cwd=tmp_path)
    # a tell cannot know who answered first (the person may have, earlier): it says what is
    # stored and how to replace it, not "elsewhere" as a fact
    line = assert_refused(res, f"your answer to query {q} (0.7) was not stored", "Stored: ")
    assert f"query {q} was already answered (earlier by you, or elsewhere)" in line
    assert "answered first elsewhere" not in line
    assert f"0.25, given {_told_at(url, q)}, note 'bob'" in line
    assert "`boloop study undo dose --storage" in line and "withdraws it" in line
    assert "boloop study ask dose --storage" in line and "shows the open query" in line
    res = run_cli(
        ["study", "tell", "dose", str(q), "0.25", "--note", "alice", "--storage", url],
        cwd=tmp_path,
    )
    assert_refused(res, "already holds the same answer as yours", "Your note was NOT stored")
    assert [(r["answer"], r["note"]) for r in load_study("dose", url).history()] == [(0.25, "bob")]
