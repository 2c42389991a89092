"""Colleagues on one study in two headless Chromium sessions (a newcomer's trial with several
people on one PostgreSQL study): an open page is told, by its live refresh, that the study was
continued as another (from another process), before an answer is typed that would not be
carried over; the undo names whose answer it withdraws (its note, time, value, and that another
browser stored it), and the colleague's page says that their answer was withdrawn instead of
showing its query open again without a word.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
The server's side of the same through the TestClient: ``test_web_team.py``.
"""

from __future__ import annotations

import pytest

from browsers import require_browser

require_browser()

from selenium.webdriver.common.by import By  # noqa: E402

from boloop.study import create_study, load_study  # noqa: E402
from study_samples import make_study  # noqa: E402
from test_web_browser import (  # noqa: E402
    _alert,
    _free_port,
    _open_id,
    _serve,
    _stop,
    _wait,
    _wait_for_new_query,
)

pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``boloop serve`` (polling every 0.3 s) over a temporary SQLite file."""
    tmp = tmp_path_factory.mktemp("serve-colleagues")
    url = f"sqlite:///{tmp / 'lab.db'}"
    for name in ("quiet", "typing", "team"):
        make_study(name, url, answers=1, key="safe", fast=True)
    port = _free_port()
    proc = _serve(url, port, poll=0.3)
    yield f"http://127.0.0.1:{port}", url
    _stop(proc)


def _shown(d, id_: str) -> str:
    """The text of element ``id_`` once it is shown (read through the page's reloads)."""
    return _wait(
        d,
        lambda drv: (
            drv.find_element(By.ID, id_).is_displayed() and drv.find_element(By.ID, id_).text
        ),
    )


def _fill(d, f: str, g: str, note: str = "") -> None:
    for fid, v in (("out-f", f), ("out-g", g), ("note", note)):
        el = d.find_element(By.ID, fid)
        el.clear()
        el.send_keys(v)


def test_an_open_page_is_told_that_the_study_was_continued(server, browser, browser2, shots):
    """Two open pages, one untouched and one with a value typed; the study of each is
    continued from this process (not the server's). The untouched page shows the notice it
    shows when drawn (it draws itself again); the page being typed in shows it below the form,
    with a link, without reloading: what was typed stays."""
    base, url = server
    browser.get(f"{base}/studies/quiet")
    browser2.get(f"{base}/studies/typing")
    _fill(browser2, "50", "")
    browser2.execute_script("window.boloopNotReloaded = true;")
    assert not browser.find_elements(By.ID, "continued")
    assert not browser2.find_element(By.ID, "live").is_displayed()
    create_study("quiet-2", from_study="quiet", storage=url)
    create_study("typing-2", from_study="typing", storage=url)

    notice = _shown(browser, "continued")
    assert "This study was continued as quiet-2, which took all its answers: answer there." in (
        notice
    )
    assert "Answers given here now are not carried over." in notice
    link = browser.find_element(By.CSS_SELECTOR, "#continued a")
    assert link.get_attribute("href") == f"{base}/studies/quiet-2"
    browser.save_screenshot(str(shots / "colleagues-continued-quiet.png"))

    live = _shown(browser2, "live")
    assert "This study was continued as typing-2, which took all its answers" in live
    assert "Answers given here now are not carried over." in live
    assert "What you typed here is not stored: stored here, it would not be carried over" in live
    link = browser2.find_element(By.CSS_SELECTOR, "#live-continued a")
    assert link.get_attribute("href") == f"{base}/studies/typing-2"
    assert browser2.execute_script("return window.boloopNotReloaded === true;")
    assert browser2.find_element(By.ID, "out-f").get_attribute("value") == "50"
    browser2.execute_script("document.getElementById('live').scrollIntoView({block: 'end'})")
    browser2.save_screenshot(str(shots / "colleagues-continued-typing.png"))
    # the notice's reload draws the page as it is now: the notice above the form
    browser2.find_element(By.ID, "live-reload").click()
    assert "continued as typing-2" in _shown(browser2, "continued")


def test_an_undo_names_whose_answer_it_withdraws_and_that_page_is_told(
    server, browser, browser2, shots
):
    """Bob stores an answer with the note "bob"; Alice's page (drawn again by its live
    refresh) shows it as the last answer, stored from another browser. Her undo's confirmation
    names it (query, value, time, note) and says it is not from her browser; she withdraws it.
    Bob's page, untouched, says at its next refresh that his answer was withdrawn, by whom,
    when, and that the query is open again."""
    base, url = server
    alice, bob = browser, browser2
    bob.get(f"{base}/studies/team")
    alice.get(f"{base}/studies/team")
    q = _open_id(bob)
    _fill(bob, "50", "0.1", "bob")
    bob.find_element(By.ID, "btn-store").click()
    _wait_for_new_query(bob, q)
    row = load_study("team", storage=url).history()[-1]
    assert (row["query_id"], row["note"]) == (q, "bob")
    told = row["told_at"][:19].replace("T", " ") + " UTC"
    desc = f'query {q}: f=50, g=0.1, given {told}, note "bob"'
    last = _wait(alice, lambda d: desc in d.find_element(By.ID, "last-answer").text and d)
    assert "(stored from another browser)" in last.find_element(By.ID, "last-answer").text
    assert "(stored from this browser)" in bob.find_element(By.ID, "last-answer").text

    alice.find_element(By.TAG_NAME, "body").send_keys("u")
    asked = _wait(alice, _alert)
    text = asked.text
    assert f"Withdraw the last answer, {desc}?" in text
    assert "NOT stored from this browser: it came from another browser" in text
    asked.accept()
    flash = _shown(alice, "flash")
    assert f"last answer withdrawn: {desc}" in flash
    assert q not in [r["query_id"] for r in load_study("team", storage=url).history()]

    said = _shown(bob, "withdrawn-yours")
    assert (
        f"Your answer, stored from this browser ({desc}), was withdrawn by an undo from "
        "another browser at 20"
    ) in said
    assert f"UTC: query {q} is open again" in said
    assert _open_id(bob) == q
    assert "since" not in bob.current_url  # said once: a reload does not say it again
    bob.save_screenshot(str(shots / "colleagues-answer-withdrawn.png"))
