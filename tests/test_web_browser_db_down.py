"""A study page in a real headless Chromium while ``boloop serve``'s PostgreSQL server is stopped
and started again (a real server, ``tests/conftest.py``): the open page says the database is
unreachable and that answers cannot be stored, keeps what was typed, and drops the notice when
the database is back; an answer sent during the outage gets the 503 page, which says it was NOT
stored, shows it and sends it again (stored once) when the database is back.

Skipped, with the reason, where chromium/chromedriver/selenium or PostgreSQL are missing (the
browser helpers and their skip come from ``test_web_browser.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from boloop.study import load_study

# the browser helpers, and the module's skip where chromium, chromedriver or selenium are missing
from browsers import desktop_driver
from study_samples import answer_for, make_study
from test_web_browser import By, Keys, _free_port, _serve, _stop, _wait

pytestmark = pytest.mark.xdist_group("postgres")


def _shots() -> Path:
    out = os.environ.get("BOLOOP_SCREENSHOTS")
    path = Path(out) if out else Path(os.environ.get("TMPDIR", "/tmp")) / "boloop-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _notice(d) -> str | None:
    """The text of the page's offline notice while it is shown, else None."""
    el = d.find_element(By.ID, "offline")
    return el.text if el.is_displayed() else None


def test_an_open_page_says_the_database_is_unreachable_and_keeps_the_answer(pg_server, pg_url):
    shots = _shots()
    before = [r["query_id"] for r in make_study("coat", pg_url, answers=1, key="lev1").history()]
    port = _free_port()
    proc = _serve(pg_url, port, poll=0.3)
    d = desktop_driver()
    try:
        d.get(f"http://127.0.0.1:{port}/studies/coat")
        qid = int(d.find_element(By.CSS_SELECTOR, "input[name=query_id]").get_attribute("value"))
        d.find_element(By.ID, "value").send_keys("0.42")
        assert _notice(d) is None

        # 1. the database goes away under an open page, and comes back
        pg_server.stop("fast")
        try:
            text = _wait(d, _notice)
            assert "database is unreachable" in text and "cannot be stored" in text
            assert "stays in the form" in text
            assert "warning" in d.find_element(By.ID, "offline").get_attribute("class").split()
            assert d.find_element(By.ID, "value").get_attribute("value") == "0.42"
            d.save_screenshot(str(shots / "web-database-unreachable.png"))
        finally:
            pg_server.start()
        _wait(d, lambda drv: _notice(drv) is None)
        assert d.find_element(By.ID, "value").get_attribute("value") == "0.42"

        # 2. the answer is sent while the database is down: not stored, shown, sent again
        pg_server.stop("fast")
        try:
            _wait(d, _notice)
            d.find_element(By.ID, "value").send_keys(Keys.ENTER)
            page = _wait(d, lambda drv: drv.find_element(By.ID, "unsent").text)
            assert f"Your answer to query {qid} was NOT stored" in page
            assert "value: 0.42" in page
            body = d.find_element(By.TAG_NAME, "body").text
            assert "The database cannot be reached" in body and "Internal Server Error" not in body
            d.save_screenshot(str(shots / "web-database-unreachable-answer.png"))
        finally:
            pg_server.start()
        assert [r["query_id"] for r in load_study("coat", storage=pg_url).history()] == before
        d.find_element(By.ID, "btn-resend").click()
        _wait(d, lambda drv: "answer stored" in drv.find_element(By.TAG_NAME, "body").text)
        rows = load_study("coat", storage=pg_url).history()
        assert [(r["query_id"], r["answer"]) for r in rows][-1] == (qid, 0.42)
        assert [r["query_id"] for r in rows].count(qid) == 1
    finally:
        d.quit()
        _stop(proc)


def test_a_resent_answer_refused_after_the_outage_stays_shown_while_others_answer(
    pg_server, pg_url
):
    """The trial: an answer sent during the outage, others answering once the database is
    back, then "send this answer again": refused (its query was answered meanwhile), and its
    values shown back. The others go on answering: the page does not reload them away."""
    shots = _shots()
    make_study("coat2", pg_url, answers=1, key="lev1")
    port = _free_port()
    proc = _serve(pg_url, port, poll=0.3)
    d = desktop_driver()
    try:
        d.get(f"http://127.0.0.1:{port}/studies/coat2")
        qid = int(d.find_element(By.CSS_SELECTOR, "input[name=query_id]").get_attribute("value"))
        d.find_element(By.ID, "value").send_keys("0.5")
        d.find_element(By.ID, "note").send_keys("sent while db down")
        pg_server.stop("fast")
        try:
            _wait(d, _notice)
            d.find_element(By.ID, "btn-store").click()
            assert f"query {qid} was NOT stored" in _wait(
                d, lambda drv: drv.find_element(By.ID, "unsent").text
            )
        finally:
            pg_server.start()
        other = load_study("coat2", storage=pg_url)
        q = other.ask()
        assert q.id == qid
        other.tell(qid, answer_for(q), note="the other bench")
        d.find_element(By.ID, "btn-resend").click()
        sent = _wait(d, lambda drv: drv.find_element(By.ID, "sent").text)
        assert f"Not stored (for query {qid})" in sent and "note: sent while db down" in sent
        for _ in range(2):  # a busy study: the others go on
            q = other.ask()
            other.tell(q.id, answer_for(q))
        live = _wait(
            d,
            lambda drv: (
                drv.find_element(By.ID, "live").is_displayed()
                and drv.find_element(By.ID, "live").text
            ),
        )
        assert "elsewhere" in live and "does not reload by itself" in live
        time.sleep(3)
        assert "note: sent while db down" in d.find_element(By.ID, "sent").text
        d.save_screenshot(str(shots / "web-database-resent-refused-kept.png"))
    finally:
        d.quit()
        _stop(proc)
